package main

import (
	"errors"
	"fmt"
	"html/template"
	"os"
	"slices"
	"strings"

	"dlm/byzantine"
)

// icReportPage is what the --interactive --report page shows.
type icReportPage struct {
	Title     string
	Summary   string
	Values    []string
	Entries   []int
	Rows      []icReportRow
	Instances []icReportInstance
	IC1, IC2  bool
	Verdict   string
	Messages  int
	Formula   string
	Bytes     int64
}

type icReportRow struct {
	ID     int
	Status string
	Class  string
	Cells  []icReportCell
}

type icReportCell struct {
	Value string
	Class string // "wrong" for an entry that breaks IC1 or IC2
	Title string
}

type icReportInstance struct {
	ID        int
	Value     string
	Generals  []icReportGeneral
	Messages  int
	Bytes     int64
	Rejected  string
	Trace     []icReportMsg
	Omitted   int
	HaveTrace bool
}

type icReportGeneral struct {
	ID       int
	Role     string
	Status   string
	Decision string
	Why      string // why it decided so (a loyal lieutenant, when explained)
}

type icReportMsg struct {
	Round    int
	From, To int
	Chain    string
	Refused  string
	Why      string
	Traitor  bool
}

// maxICReportMessages bounds the messages listed per instance.
const maxICReportMessages = 2000

var icReportTemplate = template.Must(template.New("ic").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1em 0; }
td, th { border: 1px solid #999; padding: 0.2em 0.5em; font-family: monospace; }
tr.traitor td, tr.traitor th { background: #f4dede; }
td.wrong { background: #e33; color: #fff; }
li.refused { color: #777; }
li.traitor { color: #a00; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p id="summary">{{.Summary}}</p>
<h2>Vectors</h2>
<p>Row g is the vector general g decided; entry i is general i's value as g decided it. A loyal general's own value is in the last row.</p>
<table id="vectors">
<tr><th>general</th><th>status</th>{{range .Entries}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr class="{{.Class}}"><th>{{.ID}}</th><td>{{.Status}}</td>{{range .Cells}}<td class="{{.Class}}" title="{{.Title}}">{{.Value}}</td>{{end}}</tr>
{{end}}<tr><th>own</th><td>private value</td>{{range .Values}}<td>{{.}}</td>{{end}}</tr>
</table>
<p id="counts">messages {{.Messages}} (all loyal: {{.Formula}}), bytes {{.Bytes}}</p>
<p id="verdict">IC1 (all loyal generals decide the same vector): {{if .IC1}}holds{{else}}VIOLATED{{end}}; IC2 (each loyal general's entry is its own value): {{if .IC2}}holds{{else}}VIOLATED{{end}}. {{.Verdict}}</p>
{{range .Instances}}<section id="instance-{{.ID}}">
<h2>Instance {{.ID}}: general {{.ID}} commands, value {{.Value}}</h2>
<table>
<tr><th>general</th><th>role</th><th>status</th><th>decision</th><th>why</th></tr>
{{range .Generals}}<tr><th>{{.ID}}</th><td>{{.Role}}</td><td>{{.Status}}</td><td>{{.Decision}}</td><td>{{.Why}}</td></tr>
{{end}}</table>
<p>messages {{.Messages}}, bytes {{.Bytes}}{{if .Rejected}}, refused: {{.Rejected}}{{end}}</p>
{{if .HaveTrace}}<ol>
{{range .Trace}}<li class="{{if .Refused}}refused{{else if .Traitor}}traitor{{end}}">round {{.Round}}: {{.From}} &#8594; {{.To}} {{.Chain}}{{if .Refused}} refused ({{.Refused}}): {{.Why}}{{end}}</li>
{{end}}</ol>{{if .Omitted}}<p>{{.Omitted}} more messages not listed.</p>{{end}}{{else}}<p>No trace: the messages were not recorded (over TCP).</p>{{end}}
</section>
{{end}}</body>
</html>
`))

// writeInteractiveReport writes an interactive run as one self-contained
// page: the vectors (offending entries marked), the verdict, and each
// instance's decisions and messages, in the generals' own ids.
func writeInteractiveReport(path, transport string, res *byzantine.InteractiveResult) error {
	ic := res.Config
	cfg := ic.Config
	page := icReportPage{
		Title:    fmt.Sprintf("Interactive consistency: %d instances of %s(%d)", cfg.Generals, strings.ToUpper(string(cfg.Algorithm)), cfg.MaxTraitors),
		Summary:  interactiveHeader(ic, transport),
		IC1:      res.IC1(),
		IC2:      res.IC2(),
		Messages: res.Messages,
		Formula:  loyalFormulaText(cfg),
		Bytes:    res.Bytes,
	}
	for _, v := range ic.Values {
		page.Values = append(page.Values, string(v))
	}
	var wrong []byzantine.EntryError
	if err := res.Verify(); err != nil {
		page.Verdict = err.Error()
		var ve *byzantine.VectorError
		if errors.As(err, &ve) {
			wrong = ve.Entries
		}
	}
	status := func(id byzantine.ID) string {
		s := "loyal"
		if st := cfg.StrategyOf(id); st != "" {
			s = "traitor (" + string(st) + ")"
		}
		if r := cfg.CrashRound(id); r >= 0 {
			s += fmt.Sprintf(", crashed at round %d", r)
		}
		return s
	}
	for i := range cfg.Generals {
		id := byzantine.ID(i)
		page.Entries = append(page.Entries, i)
		row := icReportRow{ID: i, Status: status(id)}
		vec, ok := res.Vectors[id]
		if !ok {
			row.Class = "traitor"
		}
		for e := range cfg.Generals {
			cell := icReportCell{Value: "-"}
			if ok {
				cell.Value = string(vec[e])
				if k := slices.IndexFunc(wrong, func(x byzantine.EntryError) bool { return x.General == id && int(x.Entry) == e }); k >= 0 {
					cell.Class, cell.Title = "wrong", fmt.Sprintf("want %s", wrong[k].Want)
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		page.Rows = append(page.Rows, row)
	}
	for i, inst := range res.Instances {
		in := icReportInstance{ID: i, Value: string(ic.Values[i]), Messages: inst.Messages, Bytes: inst.Bytes, HaveTrace: cfg.Trace}
		for v, g := range inst.Generals {
			own := byzantine.InstanceID(byzantine.ID(i), byzantine.ID(v))
			role := "lieutenant"
			if v == 0 {
				role = "commander"
			}
			d := string(g.Decision)
			if !g.Loyal || g.Crashed {
				d = "-"
			}
			why := ""
			switch {
			case d == "-":
			case v == 0:
				why = "its own value"
			case g.Explanation != nil:
				why = g.Explanation.Relabel(func(x byzantine.ID) byzantine.ID { return byzantine.InstanceID(byzantine.ID(i), x) }).Why()
			default:
				why = "not explained: the decision trees are too large to draw for every general"
			}
			in.Generals = append(in.Generals, icReportGeneral{ID: int(own), Role: role, Status: status(own), Decision: d, Why: why})
		}
		slices.SortFunc(in.Generals, func(a, b icReportGeneral) int { return a.ID - b.ID })
		var rej []string
		for _, r := range slices.Sorted(mapKeys(inst.Rejected)) {
			rej = append(rej, fmt.Sprintf("%s %d", r, inst.Rejected[r]))
		}
		in.Rejected = strings.Join(rej, ", ")
		for k, ev := range inst.Trace {
			if k == maxICReportMessages {
				in.Omitted = len(inst.Trace) - k
				break
			}
			m := byzantine.RelabelMessage(byzantine.ID(i), ev.Message)
			msg := icReportMsg{Round: ev.Round, From: int(m.From), To: int(m.To), Chain: m.Chain(), Traitor: cfg.StrategyOf(m.From) != ""}
			switch {
			case ev.Fault == byzantine.Missing:
				msg.Refused, msg.Why = "missing", "it never arrived by its round's deadline: counted as the default RETREAT"
			case ev.Rejected != "":
				msg.Refused, msg.Why = string(ev.Rejected), ev.Rejected.Describe()
			}
			in.Trace = append(in.Trace, msg)
		}
		page.Instances = append(page.Instances, in)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := icReportTemplate.Execute(f, page); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
