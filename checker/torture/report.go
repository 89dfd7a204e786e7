package torture

import (
	"dlm/checker"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"text/tabwriter"
	"time"
)

// WriteSummary writes the report as a readable table.
func (r *Report) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	ce := "none"
	if r.Counterexample != nil {
		ce = *r.Counterexample
	}
	rows := [][2]string{
		{"scenario", r.Scenario},
		{"seed", fmt.Sprint(r.Seed)},
		{"config", r.Config.String()},
		{"expected", r.Expected.String()},
		{"acquisitions", fmt.Sprintf("%d of %d attempts", r.Acquisitions, r.Attempts)},
		{"violations", fmt.Sprint(r.Violations)},
		{"stale writes accepted", fmt.Sprint(r.StaleWritesAccepted)},
		{"max unavailable", fmt.Sprintf("%.0fms", r.MaxUnavailableMS)},
		{"faults", fmt.Sprint(len(r.Faults))},
	}
	for _, c := range r.Checks {
		rows = append(rows, [2]string{"check " + c.Check, c.Verdict.String()})
	}
	rows = append(rows, [2]string{"counterexample", ce}, [2]string{"outcome", r.Outcome})
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	return tw.Flush()
}

// timeline geometry of the HTML report.
const (
	tlLeft  = 110 // label column
	tlWidth = 900 // time axis
	tlRow   = 26
	tlTop   = 24
)

type tlBar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type tlLabel struct {
	X, Y  float64
	Text  string
	Class string
}

type tlTimeline struct {
	Resource string
	Width    int
	Height   int
	Faults   []tlBar
	Bars     []tlBar
	Labels   []tlLabel
}

type htmlData struct {
	Title     string
	Report    *Report
	Matches   bool
	Config    string
	Counter   string
	Timelines []tlTimeline
	Faults    []htmlFault
}

type htmlFault struct {
	Kind, Target, From, To, Note string
}

// WriteHTML writes a self-contained HTML page (also well-formed XML): the
// summary, each check's result, and per resource a timeline of who held the
// lock, failed attempts, writes (stale ones in red), the faults as shaded
// bands, and the operations of every violation outlined in red.
func (r *Report) WriteHTML(w io.Writer) error {
	h := r.History
	if h == nil {
		h = &checker.History{}
	}
	bad := map[int]bool{}
	for _, c := range r.Checks {
		if c.Verdict == checker.Violated {
			for _, id := range c.Ops {
				bad[id] = true
			}
		}
	}
	holds := h.Holds()
	end := max(h.Horizon(), 1)
	for _, hs := range holds {
		for _, hd := range hs {
			end = max(end, hd.To) // validity that outlasts the last event
		}
	}
	x := func(t int64) float64 { return tlLeft + float64(t)*tlWidth/float64(end) }
	span := func(from, to int64) float64 { return max(1, float64(to-from)*tlWidth/float64(end)) }
	var resources []string
	for _, o := range h.Ops {
		if o.Kind == checker.Acquire && !containsFault(resources, o.Resource) {
			resources = append(resources, o.Resource)
		}
	}
	sort.Strings(resources)
	data := htmlData{
		Title:   fmt.Sprintf("dlm torture: %s, seed %d", r.Scenario, r.Seed),
		Report:  r,
		Matches: r.Matches,
		Config:  r.Config.String(),
	}
	if r.Counterexample != nil {
		data.Counter = *r.Counterexample
	}
	for _, f := range h.Faults {
		to := "never healed"
		if f.End >= 0 {
			to = ms(f.End)
		}
		data.Faults = append(data.Faults, htmlFault{f.Kind, f.Target, ms(f.Start), to, f.Note})
	}
	for _, res := range resources {
		var clients []string
		row := map[string]int{}
		for _, o := range h.Ops {
			if o.Resource == res && o.Kind != checker.Read {
				if _, ok := row[o.Client]; !ok {
					row[o.Client] = len(clients)
					clients = append(clients, o.Client)
				}
			}
		}
		tl := tlTimeline{Resource: res, Width: tlLeft + tlWidth + 20, Height: tlTop + tlRow*len(clients) + 30}
		for _, f := range h.Faults {
			e := f.End
			if e < 0 {
				e = end
			}
			tl.Faults = append(tl.Faults, tlBar{X: x(f.Start), Y: 0, W: span(f.Start, max(e, f.Start+1)), H: float64(tl.Height - 20), Class: "fault",
				Title: fmt.Sprintf("%s %s from %s to %s: %s", f.Kind, f.Target, ms(f.Start), ms(e), f.Note)})
		}
		for i, c := range clients {
			tl.Labels = append(tl.Labels, tlLabel{X: 4, Y: float64(tlTop + tlRow*i + 16), Text: c})
		}
		ids := opIDs(h)
		for _, hd := range holds[res] {
			y := float64(tlTop + tlRow*row[hd.Client])
			cls := "hold"
			if hd.Possible {
				cls = "maybe"
			}
			if bad[ids[hd.Lock]] {
				cls += " violation"
			}
			tl.Bars = append(tl.Bars, tlBar{X: x(hd.From), Y: y + 3, W: span(hd.From, hd.To), H: tlRow - 8, Class: cls,
				Title: fmt.Sprintf("%s held by %s from %s to %s (%s)%s", hd.Lock, hd.Client, ms(hd.From), ms(hd.To), hd.Why, tokenNote(hd.Token))})
		}
		for _, o := range h.Ops {
			if o.Resource != res {
				continue
			}
			y := float64(tlTop + tlRow*row[o.Client])
			e := o.End
			if e < 0 {
				e = end
			}
			switch {
			case o.Kind == checker.Acquire && !o.OK:
				tl.Bars = append(tl.Bars, tlBar{X: x(o.Start), Y: y + tlRow/2 - 1, W: span(o.Start, e), H: 2, Class: "attempt",
					Title: fmt.Sprintf("%s tried from %s to %s: %s", o.Client, ms(o.Start), ms(e), o.Err)})
			case o.Kind == checker.Write:
				cls := "write"
				if !o.OK {
					cls = "rejected"
				}
				if bad[o.ID] {
					cls += " violation"
				}
				verb := "accepted"
				if !o.OK {
					verb = "rejected"
				}
				tl.Bars = append(tl.Bars, tlBar{X: x(o.Start) - 2, Y: y, W: 5, H: tlRow - 2, Class: cls,
					Title: fmt.Sprintf("write %q under %s at %s%s: %s", o.Value, o.Lock, ms(o.Start), tokenNote(o.Token), verb)})
			}
		}
		for i := 0; i <= 10; i++ {
			t := end * int64(i) / 10
			tl.Labels = append(tl.Labels, tlLabel{X: x(t), Y: float64(tl.Height - 6), Text: fmt.Sprintf("%.0fms", float64(t)/float64(time.Millisecond)), Class: "axis"})
		}
		data.Timelines = append(data.Timelines, tl)
	}
	t, err := template.New("report").Parse(reportTemplate)
	if err != nil {
		return err
	}
	return t.Execute(w, data)
}

// ms formats nanoseconds since the start of the run as milliseconds.
func ms(ns int64) string { return fmt.Sprintf("%.1fms", float64(ns)/float64(time.Millisecond)) }

// opIDs maps each grant to the id of its acquisition.
func opIDs(h *checker.History) map[string]int {
	m := map[string]int{}
	for _, o := range h.Ops {
		if o.Kind == checker.Acquire {
			m[o.Lock] = o.ID
		}
	}
	return m
}

func tokenNote(t uint64) string {
	if t == 0 {
		return ""
	}
	return fmt.Sprintf(", token %d", t)
}

// reportTemplate is the HTML report, written so that it is also well-formed
// XML (every element closed, attributes quoted).
//
//go:embed report.html.tmpl
var reportTemplate string
