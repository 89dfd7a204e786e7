package main

import (
	"encoding/csv"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGeneralsSweep: the CSV holds every (algorithm, n, m) within the
// bounds with the measured counts equal to the paper's formulas and the
// worst traitor run of each point, and the SVG draws one panel per series
// with a dot and a square per row.
func TestGeneralsSweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, svgPath := filepath.Join(dir, "sweep.csv"), filepath.Join(dir, "sweep.svg")
	code, stdout, stderr := runGeneralsCLI(t, "sweep", "--csv", csvPath, "--svg", svgPath, "--max-n", "7", "--max-m", "2")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := map[string]int{}
	for i, h := range recs[0] {
		head[h] = i
	}
	rows := recs[1:]
	// OM: n=4..7 for m=1, n=7 for m=2; SM: n=3..7 for m=1, n=4..7 for m=2.
	if want := 4 + 1 + 5 + 4; len(rows) != want {
		t.Errorf("%d rows, want %d", len(rows), want)
	}
	for _, r := range rows {
		if r[head["messages"]] != r[head["messages_formula"]] {
			t.Errorf("%v: measured messages differ from the formula", r)
		}
		if r[head["algorithm"]] == "sm" && r[head["signatures_verified"]] != r[head["signatures_verified_formula"]] {
			t.Errorf("%v: signature checks differ from the formula", r)
		}
		if r[head["algorithm"]] == "om" && r[head["n"]] == "7" && r[head["m"]] == "2" && r[head["messages"]] != "156" {
			t.Errorf("OM(2) n=7: %s messages, want 156 (B6)", r[head["messages"]])
		}
	}
	sf, err := os.Open(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	dec := xml.NewDecoder(sf)
	dots, lines, squares := 0, 0, 0
	type box struct {
		name       string
		x, y, w, h int
	}
	var panels []box
	var legend box
	num := func(se xml.StartElement, name string) int {
		for _, a := range se.Attr {
			if a.Name.Local == name {
				v, _ := strconv.Atoi(a.Value)
				return v
			}
		}
		return -1
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && a.Value == "measured" {
					dots++
				}
				if a.Name.Local == "class" && a.Value == "formula" {
					lines++
				}
				if a.Name.Local == "class" && a.Value == "traitor" {
					squares++
				}
				if a.Name.Local == "class" && a.Value == "panel" {
					panels = append(panels, box{"panel", num(se, "data-x"), num(se, "data-y"), num(se, "data-w"), num(se, "data-h")})
				}
				if a.Name.Local == "class" && a.Value == "legend" {
					legend = box{"legend", 0, num(se, "data-y"), 0, num(se, "data-h")}
				}
			}
		}
	}
	if dots != len(rows) || lines != 4 || squares != len(rows) {
		t.Errorf("SVG: %d dots, %d traitor squares and %d formula lines, want %d, %d and 4", dots, squares, lines, len(rows), len(rows))
	}
	// One panel per series, none overlapping another or the legend
	// (regression: OM(1) and SM(1-3) drew on top of each other
	// and OM(3) was one dot under the legend).
	if len(panels) != 4 {
		t.Errorf("%d panels, want one per algorithm and m: 4", len(panels))
	}
	for i, p := range panels {
		if p.y < legend.y+legend.h {
			t.Errorf("panel %d (y=%d) overlaps the legend band (%d..%d)", i, p.y, legend.y, legend.y+legend.h)
		}
		for _, q := range panels[i+1:] {
			if p.x < q.x+q.w && q.x < p.x+p.w && p.y < q.y+q.h && q.y < p.y+p.h {
				t.Errorf("panels at (%d,%d) and (%d,%d) overlap", p.x, p.y, q.x, q.y)
			}
		}
	}
	for _, r := range rows {
		loyal, _ := strconv.Atoi(r[head["messages"]])
		worst, _ := strconv.Atoi(r[head["worst_traitor_messages"]])
		if worst < loyal || r[head["worst_strategy"]] == "" || r[head["traitor_runs_ic"]] != "held" {
			t.Errorf("%v: the worst traitor run is not measured, or broke IC1/IC2", r)
		}
	}
	if code, _, stderr := runGeneralsCLI(t, "sweep"); code != exitUsage || !strings.Contains(stderr, "--csv") {
		t.Errorf("sweep without outputs: exit %d (%s), want %d", code, stderr, exitUsage)
	}
}
