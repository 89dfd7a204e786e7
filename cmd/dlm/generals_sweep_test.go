package main

import (
	"encoding/csv"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneralsSweep: the CSV holds every (algorithm, n, m) within the
// bounds with the measured counts equal to the paper's formulas, and the
// SVG plots one dot per row.
func TestGeneralsSweep(t *testing.T) {
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
	dots, lines := 0, 0
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
			}
		}
	}
	if dots != len(rows) || lines != 4 {
		t.Errorf("SVG: %d dots and %d formula lines, want %d and 4", dots, lines, len(rows))
	}
	if code, _, stderr := runGeneralsCLI(t, "sweep"); code != exitUsage || !strings.Contains(stderr, "--csv") {
		t.Errorf("sweep without outputs: exit %d (%s), want %d", code, stderr, exitUsage)
	}
}
