package checker

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the checkers' results")

// TestGoldenHistories runs each checker over the recorded histories in
// testdata: *-ok*.json must pass, *-bad.json must be violated,
// *-unknown.json undecided, and each result must read as its .golden file.
func TestGoldenHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden histories: %v", err)
	}
	checks := map[string]func(*History) Result{
		"mutex":        CheckMutex,
		"extend":       CheckMutex, // R17: no resurrection
		"fencing":      CheckFencing,
		"linearizable": func(h *History) Result { return CheckLinearizable(h, 5*time.Second) },
		"liveness":     func(h *History) Result { return CheckLiveness(h, time.Second, time.Second) },
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			check := checks[strings.SplitN(name, "-", 2)[0]]
			if check == nil {
				t.Fatalf("no checker for %s: name it mutex-, extend-, fencing-, linearizable- or liveness-", f)
			}
			var want Verdict
			switch {
			case strings.Contains(name, "-ok"):
				want = OK
			case strings.HasSuffix(name, "-bad"):
				want = Violated
			case strings.HasSuffix(name, "-unknown"):
				want = Unknown
			default:
				t.Fatalf("%s: name must end in -ok, -bad or -unknown", f)
			}
			h, err := LoadHistory(f)
			if err != nil {
				t.Fatal(err)
			}
			got := check(h)
			if got.Verdict != want {
				t.Fatalf("verdict = %v, want %v (%s)", got.Verdict, want, got)
			}
			if want == Violated && (got.Violations == 0 || got.Counterexample == "") {
				t.Errorf("violated without a count or counterexample: %+v", got)
			}
			golden := strings.TrimSuffix(f, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./checker -run Golden -update to create it)", err)
			}
			if g, w := got.String(), strings.TrimSpace(string(b)); g != w {
				t.Errorf("result:\n got %s\nwant %s", g, w)
			}
		})
	}
}

func TestDecodeHistoryRejectsMalformed(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"duplicate id", `{"nodes":5,"ops":[{"id":1,"kind":"acquire","lock":"a","start":0,"end":1},{"id":1,"kind":"acquire","lock":"b","start":0,"end":1}],"faults":[]}`, "duplicate op id 1"},
		{"end before start", `{"nodes":5,"ops":[{"id":1,"kind":"acquire","lock":"a","start":5,"end":1}],"faults":[]}`, "ends (1) before it starts (5)"},
		{"unknown kind", `{"nodes":5,"ops":[{"id":1,"kind":"grab","start":0,"end":1}],"faults":[]}`, `unknown kind "grab"`},
		{"orphan release", `{"nodes":5,"ops":[{"id":1,"kind":"release","lock":"x","start":0,"end":1}],"faults":[]}`, `lock "x", which no acquisition created`},
		{"unknown field", `{"nodes":5,"opz":[]}`, `unknown field "opz"`},
		{"acquire without lock", `{"nodes":5,"ops":[{"id":1,"kind":"acquire","start":0,"end":1}],"faults":[]}`, "names no lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeHistory(strings.NewReader(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestMaxUnavailable(t *testing.T) {
	h, err := LoadHistory("testdata/liveness-bad.json")
	if err != nil {
		t.Fatal(err)
	}
	u, ok := MaxUnavailable(h)
	if !ok || u.Duration() != 5*time.Second || u.Resource != "r" {
		t.Fatalf("MaxUnavailable = %+v, %v; want 5s on r", u, ok)
	}
}

func TestSpans(t *testing.T) {
	got := subtract(union([]span{{0, 10}, {5, 20}, {30, 40}}), union([]span{{2, 4}, {15, 35}}))
	want := []span{{0, 2}, {4, 15}, {35, 40}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestHTMLReport renders the report of a recorded violation and parses it
// as XML: the page must be well formed, mark the violation, and draw one
// timeline per resource.
func TestHTMLReport(t *testing.T) {
	for _, f := range []string{"testdata/mutex-bad.json", "testdata/fencing-bad.json", "testdata/mutex-ok.json"} {
		t.Run(filepath.Base(f), func(t *testing.T) {
			h, err := LoadHistory(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig("restart-without-persistence")
			rep := Analyze(cfg, h)
			var buf bytes.Buffer
			if err := rep.WriteHTML(&buf); err != nil {
				t.Fatal(err)
			}
			doc := parseXHTML(t, buf.Bytes())
			resources := map[string]bool{}
			for _, o := range h.Ops {
				if o.Kind == Acquire {
					resources[o.Resource] = true
				}
			}
			if got, want := doc.svgs, len(resources); got != want {
				t.Errorf("timelines = %d, want %d (one per resource)", got, want)
			}
			wantViolation := rep.Violations > 0
			if got := doc.classes["violation"] > 0; got != wantViolation {
				t.Errorf("violation marked = %v, want %v", got, wantViolation)
			}
			if doc.classes["hold"] == 0 {
				t.Errorf("no hold bars drawn")
			}
			if len(h.Faults) > 0 && doc.classes["fault"] == 0 {
				t.Errorf("faults not drawn")
			}
			if !strings.Contains(doc.text, rep.Outcome) {
				t.Errorf("outcome %q not in the page", rep.Outcome)
			}
		})
	}
}

type xhtmlDoc struct {
	svgs    int
	classes map[string]int
	text    string
}

// parseXHTML parses the page strictly as XML and tallies what it draws.
func parseXHTML(t *testing.T, b []byte) xhtmlDoc {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	doc := xhtmlDoc{classes: map[string]int{}}
	var text strings.Builder
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("report is not well-formed: %v\n%s", err, b)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			if e.Name.Local == "svg" {
				doc.svgs++
			}
			for _, a := range e.Attr {
				if a.Name.Local == "class" {
					for _, c := range strings.Fields(a.Value) {
						doc.classes[c]++
					}
				}
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			text.Write(e)
		}
	}
	if depth != 0 {
		t.Fatalf("unbalanced elements: depth %d at the end", depth)
	}
	doc.text = text.String()
	return doc
}
