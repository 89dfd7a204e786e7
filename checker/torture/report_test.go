package torture

import (
	"bytes"
	"encoding/xml"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"dlm/checker"
)

// TestHTMLReport renders the report of a recorded violation and parses it
// as XML: the page must be well formed, mark the violation, and draw one
// timeline per resource.
func TestHTMLReport(t *testing.T) {
	for _, f := range []string{"../testdata/mutex-bad.json", "../testdata/fencing-bad.json", "../testdata/mutex-ok.json"} {
		t.Run(filepath.Base(f), func(t *testing.T) {
			h, err := checker.LoadHistory(f)
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
				if o.Kind == checker.Acquire {
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
