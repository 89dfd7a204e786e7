package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGeneralsInteractiveExplain: --interactive --explain says, instance
// by instance, what each explained loyal general decided for that
// commander's entry and why (OM's majority over the commander's value and
// the relays, SM's set V), in the generals' own ids, and sums up the
// vector conditions naming the traitors (regression: --explain was refused
// with --interactive).
func TestGeneralsInteractiveExplain(t *testing.T) {
	for _, tt := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr string
	}{
		{"OM flip, every general", []string{"--faulty", "2", "--strategy", "flip", "--explain", "all"}, exitOK, []string{
			"instance 0: general 0 (loyal) commands its value v0\n  general 0 is the commander: its entry is its own value v0\n  general 1 decided v0: majority(v0 from 0, attack via 2, v0 via 3) = v0\n    0     v0   majority(v0, attack, v0) = v0\n      0:2 attack\n      0:3 v0\n",
			"instance 2: general 2 (traitor, flip) commands its value v2: a traitor's entry, which IC2 does not bind",
			"  general 3 decided attack: majority(attack from 2, attack via 1, attack via 0) = attack\n",
			"IC1 holds: the loyal generals 0, 1 and 3 decided the same vector [v0 v1 attack v3]",
			"IC2 holds: in every loyal vector the entry of each loyal general is its own value: 0 = v0, 1 = v1, 3 = v3",
			"traitors, whose entries IC2 does not bind: 2 (flip, every loyal general holds attack)",
			"faulty generals: [2] (2: a traitor (flip)); 1, at most m = 1, so the conditions are guaranteed",
		}, ""},
		{"SM, one general", []string{"--algorithm", "sm", "-n", "4", "-m", "2", "--faulty", "0:forge,3:two-faced", "--explain", "1"}, exitOK, []string{
			"  general 1 decided retreat: it accepted no signed order: V = {}, choice(V) = retreat\n",
			"  general 1 decided v2: the signed orders it accepted are V = {v2}, choice(V) = v2\n      v2         first by v2:2 in round 0\n",
			"  general 1 decided retreat: the signed orders it accepted are V = {v3, attack}, choice(V) = retreat\n      v3         first by v3:3 in round 0\n      attack     first by attack:3:2 in round 1\n",
			"traitors, whose entries IC2 does not bind: 0 (forge, every loyal general holds retreat); 3 (two-faced, every loyal general holds retreat)",
		}, ""},
		{"below the bound", []string{"-n", "3", "--values", "a,b,c", "--faulty", "2", "--strategy", "flip", "--unsafe", "--explain", "all"}, exitFailure, []string{
			"  general 1 decided retreat: majority(a from 0, attack via 2) = retreat\n",
			"IC1 VIOLATED at entry 0: general 0 holds a, general 1 holds retreat (instance 0 left its loyal generals disagreeing)",
			"IC2 VIOLATED at entry 0: general 1 holds retreat, want a, general 0's own value (instance 0: a loyal commander's value was not obeyed)",
			"but n = 3 is below n >= 3m+1 = 4, so the conditions are not guaranteed",
		}, "IC2 violated"},
		{"a crashed general", []string{"--crash", "3@0", "--explain", "all"}, exitOK, []string{
			"instance 3: general 3 (loyal, crashed at round 0) commands its value v3: a crashed general's entry, which IC2 does not bind\n  general 0 decided retreat: majority(nothing from 3 (retreat by default), retreat via 1, retreat via 2) = retreat\n",
			"general 3 crashed at round 0: it decides no vector, and IC2 does not bind its entry",
			"faulty generals: [3] (3: crashed); 1, at most m = 1, so the conditions are guaranteed",
		}, ""},
		{"over TCP", []string{"--transport", "tcp", "--round-timeout", "2s", "--faulty", "2", "--strategy", "flip", "--explain", "1"}, exitOK, []string{
			"  general 1 decided v0: majority(v0 from 0, attack via 2, v0 via 3) = v0\n",
		}, ""},
		{"trees too large", []string{"-n", "13", "-m", "4", "--explain", "all"}, exitUsage, nil, "explain fewer generals"},
		{"not an id", []string{"--explain", "everyone"}, exitUsage, nil, `--explain "everyone": want a general's id or all`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGeneralsCLI(t, append([]string{"--interactive"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			for _, want := range tt.wantStdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
		})
	}
}

// TestGeneralsInteractiveExplainJSON: --json carries each explained
// decision per instance and general, with why, and the summary.
func TestGeneralsInteractiveExplainJSON(t *testing.T) {
	code, stdout, stderr := runGeneralsCLI(t, "--interactive", "--faulty", "2", "--strategy", "flip", "--explain", "all", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var out struct {
		Explanations map[string]map[string]struct {
			Decision string `json:"decision"`
			Why      string `json:"why"`
			Tree     *struct {
				Path []int `json:"path"`
			} `json:"tree"`
		} `json:"explanations"`
		Summary   []string            `json:"summary"`
		FaultyWhy map[string][]string `json:"faulty_why"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if got := len(out.Explanations); got != 4 {
		t.Fatalf("explanations of %d instances, want 4", got)
	}
	if _, ok := out.Explanations["2"]["2"]; ok {
		t.Errorf("the traitor 2 is explained under --explain all")
	}
	e := out.Explanations["2"]["0"]
	if e.Decision != "attack" || e.Why != "majority(attack from 2, attack via 1, attack via 3) = attack" || e.Tree == nil || e.Tree.Path[0] != 2 {
		t.Errorf("instance 2, general 0: %+v", e)
	}
	if out.Explanations["1"]["1"].Why != "the commander's entry is its own value" {
		t.Errorf("instance 1, general 1: %+v", out.Explanations["1"]["1"])
	}
	if w := out.FaultyWhy["2"]; len(out.FaultyWhy) != 1 || len(w) != 1 || w[0] != "a traitor (flip)" {
		t.Errorf("faulty_why %v, want general 2, a traitor (flip)", out.FaultyWhy)
	}
	if len(out.Summary) == 0 || !strings.HasPrefix(out.Summary[0], "IC1 holds") {
		t.Errorf("summary %q", out.Summary)
	}
}
