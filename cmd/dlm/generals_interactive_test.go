package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGeneralsInteractiveExitCodes(t *testing.T) {
	runGeneralsCases(t, []generalsCase{
		{"loyal OM", []string{"--interactive", "--values", "a,b,c,d"}, exitOK, "[a b c d]", ""},
		{"flip traitor", []string{"--interactive", "--values", "north,east,south,west", "--faulty", "2", "--strategy", "flip"}, exitOK, "[north east attack west]", ""},
		{"SM two traitors among four", []string{"--interactive", "--algorithm", "sm", "-n", "4", "-m", "2", "--faulty", "0:forge,3:two-faced"}, exitOK, "IC2 (each loyal general's entry is its own value): holds", ""},
		{"below the bound, allowed", []string{"--interactive", "-n", "3", "--values", "a,b,c", "--faulty", "2", "--strategy", "flip", "--unsafe"}, exitFailure, "VIOLATED", "IC2 violated"},
		{"below the bound, refused", []string{"--interactive", "-n", "3", "--values", "a,b,c", "--faulty", "2"}, exitUsage, "", "3m+1"},
		{"wrong number of values", []string{"--interactive", "--values", "a,b"}, exitUsage, "", "2 values for 4 generals"},
		{"empty value", []string{"--interactive", "--values", "a,,c,d"}, exitUsage, "", "value of general 1"},
		{"values without interactive", []string{"--values", "a,b,c,d"}, exitUsage, "", "need --interactive"},
		{"report with every traitor set refused", []string{"--interactive", "--every-traitor-set", "--report", "x.html"}, exitUsage, "", "--report"},
		{"explain with every traitor set refused", []string{"--interactive", "--every-traitor-set", "--explain", "1"}, exitUsage, "", "--explain explains one run"},
		{"trace over tcp refused", []string{"--interactive", "--trace", "--transport", "tcp"}, exitUsage, "", "memory only"},
		{"every traitor set", []string{"--interactive", "-n", "7", "-m", "2", "--every-traitor-set"}, exitOK, "169 runs, 0 violating", ""},
		{"every traitor set below the bound", []string{"--interactive", "-n", "3", "--every-traitor-set", "--unsafe"}, exitFailure, "VIOLATED", "violate the vector conditions"},
	})
}

// TestGeneralsInteractiveJSON checks the vectors of --json, in memory and
// over TCP, against the vector conditions.
func TestGeneralsInteractiveJSON(t *testing.T) {
	for _, transport := range []string{"memory", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			code, stdout, stderr := runGeneralsCLI(t, "--interactive", "-n", "7", "-m", "2", "--values", "a,b,c,d,e,f,g",
				"--faulty", "1:two-faced,4:colluding", "--transport", transport, "--round-timeout", "5s", "--json")
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			var out struct {
				Vectors       map[string][]string `json:"vectors"`
				Messages      int                 `json:"messages"`
				MessagesLoyal int                 `json:"messages_loyal_formula"`
				IC1, IC2      bool
				Violations    []any `json:"violations"`
			}
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatal(err)
			}
			if !out.IC1 || !out.IC2 || len(out.Violations) != 0 {
				t.Fatalf("ic1 %v ic2 %v violations %v", out.IC1, out.IC2, out.Violations)
			}
			if out.MessagesLoyal != 7*156 || out.Messages != 7*156 {
				t.Errorf("messages %d, formula %d, want %d (OM traitors send one message per path)", out.Messages, out.MessagesLoyal, 7*156)
			}
			var ids []string
			for id := range out.Vectors {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []string{"0", "2", "3", "5", "6"}) {
				t.Fatalf("vectors of %v, want the loyal generals 0 2 3 5 6", ids)
			}
			for _, id := range ids {
				if !slices.Equal(out.Vectors[id], out.Vectors["0"]) {
					t.Errorf("general %s: %v, general 0: %v", id, out.Vectors[id], out.Vectors["0"])
				}
				for _, j := range []int{0, 2, 3, 5, 6} {
					if out.Vectors[id][j] != string(rune('a'+j)) {
						t.Errorf("general %s holds %q for general %d", id, out.Vectors[id][j], j)
					}
				}
			}
		})
	}
}

// TestGeneralsInteractiveReport writes the page of a run below the bound,
// checks that it is well-formed, that every offending entry is marked and
// that each instance lists its messages, in the generals' own ids.
func TestGeneralsInteractiveReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ic.html")
	code, stdout, stderr := runGeneralsCLI(t, "--interactive", "-n", "3", "--values", "a,b,c", "--faulty", "2", "--strategy", "flip", "--unsafe", "--report", path)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailure, stdout, stderr)
	}
	if strings.Contains(stdout, "instance 0") {
		t.Errorf("the text shows the trace, which was not asked for:\n%s", stdout)
	}
	elems := parseReport(t, path)
	wrong, sections := 0, 0
	for _, e := range elems {
		if e.name == "td" && e.attrs["class"] == "wrong" {
			wrong++
			if e.in != "vectors" {
				t.Errorf("an offending entry outside the vectors table (in %q)", e.in)
			}
		}
		if e.name == "section" {
			sections++
		}
	}
	if wrong != 2 || sections != 3 {
		t.Errorf("%d entries marked wrong, %d instance sections; want 2 and 3", wrong, sections)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Instance 2: general 2 commands, value c", "round 0: 2 &#8594; 0 attack:2", "VIOLATED",
		"<td>retreat</td><td>majority(a from 0, attack via 2) = retreat</td>", "all loyal: n x ((n-1) &#43; (n-1)(n-2)) = 3 x (2 &#43; 2x1) = 3 x 4 = 12"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestGeneralsInteractiveFormula: the message count is stated against the
// loyal formula, written out with the run's numbers, and the difference
// named (regression: "all loyal: n x 9 = 36" gave the count of one
// instance but not the formula).
func TestGeneralsInteractiveFormula(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"OM(1)", nil, "messages 36 (all loyal: n x ((n-1) + (n-1)(n-2)) = 4 x (3 + 3x2) = 4 x 9 = 36)"},
		{"OM(2)", []string{"-n", "7", "-m", "2"}, "messages 1092 (all loyal: n x ((n-1) + (n-1)(n-2) + (n-1)(n-2)(n-3)) = 7 x (6 + 6x5 + 6x5x4) = 7 x 156 = 1092)"},
		{"SM more", []string{"--algorithm", "sm", "-n", "4", "-m", "2", "--faulty", "0:forge,3:two-faced"}, "messages 39 (all loyal: n x (n-1)^2 = 4 x 3^2 = 4 x 9 = 36; 3 more, from what the traitors sent and the relays it caused)"},
		{"OM silent", []string{"--faulty", "2", "--strategy", "silent"}, "messages 27 (all loyal: n x ((n-1) + (n-1)(n-2)) = 4 x (3 + 3x2) = 4 x 9 = 36; 9 fewer: traitors withheld messages, or generals crashed, or messages were lost)"},
		{"JSON", []string{"--json"}, `"messages_formula": "n x ((n-1) + (n-1)(n-2)) = 4 x (3 + 3x2) = 4 x 9 = 36"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGeneralsCLI(t, append([]string{"--interactive"}, tt.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.want) {
				t.Errorf("stdout lacks %q:\n%s", tt.want, stdout)
			}
		})
	}
}
