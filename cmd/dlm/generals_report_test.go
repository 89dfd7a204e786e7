package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// htmlElem is one element of a parsed report: its name, attributes and
// the id of the closest enclosing element that has one.
type htmlElem struct {
	name  string
	attrs map[string]string
	in    string // id of the enclosing table or section
}

// parseReport parses the page as XML (the report is well-formed) and
// returns its elements in document order.
func parseReport(t *testing.T, path string) []htmlElem {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	dec.Strict = true
	dec.Entity = xml.HTMLEntity
	var out []htmlElem
	var stack []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the report is not well-formed: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e := htmlElem{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			for i := len(stack) - 1; i >= 0; i-- {
				if stack[i] != "" {
					e.in = stack[i]
					break
				}
			}
			out = append(out, e)
			stack = append(stack, e.attrs["id"])
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

// TestGeneralsReport: --report writes a self-contained page with the
// messages per round (traitors marked), every loyal lieutenant's decision
// and the verdict.
func TestGeneralsReport(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		messages  int
		traitor   string
		trees     map[string]int // lieutenant -> tree nodes (OM) or values (SM)
		ic1, ic2  string
		wantInOut string
	}{
		{"OM two-faced lieutenant", []string{"--faulty", "3"}, exitOK, 9, "3", map[string]int{"1": 3, "2": 3}, "true", "true", "IC1"},
		{"SM two-faced commander", []string{"--algorithm", "sm", "-n", "3", "--faulty", "0"}, exitOK, 4, "0", map[string]int{"1": 2, "2": 2}, "true", "true", "IC1"},
		{"OM unsafe B3", []string{"-n", "3", "--faulty", "2", "--strategy", "flip", "--unsafe"}, exitFailure, 4, "2", map[string]int{"1": 2}, "true", "false", "VIOLATED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.html")
			code, stdout, stderr := runGeneralsCLI(t, append([]string{"--report", path}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.wantInOut) || strings.Contains(stdout, "round 0:") {
				t.Errorf("stdout should be the usual summary without a trace:\n%s", stdout)
			}
			raw, _ := os.ReadFile(path)
			for _, bad := range []string{"<script", "http://", "https://", "<link"} {
				if strings.Contains(string(raw), bad) {
					t.Errorf("the page is not self-contained: it has %q", bad)
				}
			}
			elems := parseReport(t, path)
			delivered := 0
			traitorRow := false
			nodes := map[string]int{}
			var verdict map[string]string
			for _, e := range elems {
				switch {
				case e.name == "td" && e.attrs["data-count"] != "" && strings.HasPrefix(e.in, "round-"):
					c, _ := strconv.Atoi(e.attrs["data-count"])
					delivered += c
				case e.name == "tr" && e.attrs["data-from"] == tt.traitor && strings.Contains(e.attrs["class"], "traitor"):
					traitorRow = true
				case e.name == "li" && (strings.Contains(e.attrs["class"], "node") || e.attrs["class"] == "value") && strings.HasPrefix(e.in, "explain-"):
					nodes[strings.TrimPrefix(e.in, "explain-")]++
				case e.attrs["id"] == "verdict":
					verdict = e.attrs
				}
			}
			if delivered != tt.messages {
				t.Errorf("messages in the round tables = %d, want %d", delivered, tt.messages)
			}
			if !traitorRow {
				t.Errorf("the traitor %s's rows are not marked", tt.traitor)
			}
			for id, want := range tt.trees {
				if nodes[id] != want {
					t.Errorf("lieutenant %s: %d tree nodes or values, want %d (all: %v)", id, nodes[id], want, nodes)
				}
			}
			if _, ok := nodes[tt.traitor]; ok {
				t.Errorf("the traitor %s's decision is explained", tt.traitor)
			}
			if verdict == nil || verdict["data-ic1"] != tt.ic1 || verdict["data-ic2"] != tt.ic2 {
				t.Errorf("verdict = %v, want ic1=%s ic2=%s", verdict, tt.ic1, tt.ic2)
			}
		})
	}
}
