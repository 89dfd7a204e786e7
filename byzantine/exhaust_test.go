package byzantine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"dlm/byzantine"
)

// TestExhaust: the search covers every traitor set up to m and every
// behaviour of its adversary; it holds for the safe sizes, finds B3's
// counterexample below them, and says when it stopped early (a review found:
// it used to try one traitor at a time whatever m was, and claim a proof
// for OM n=5 m=2).
func TestExhaust(t *testing.T) {
	tests := []struct {
		name      string
		alg       byzantine.Algorithm
		n, m      int
		unsafe    bool
		opts      byzantine.ExhaustOptions
		wantRuns  int // 0: not checked
		wantSets  int // traitor sets covered
		wantIC1   bool
		wantIC2   bool
		wantWhole bool
	}{
		// none: 2 orders; a lieutenant: 3^2 x 2; the commander: 3^3.
		{"OM n4 m1", byzantine.OM, 4, 1, false, byzantine.ExhaustOptions{}, 2 + 18 + 27, 5, false, false, true},
		{"OM n4 m1 without symmetry", byzantine.OM, 4, 1, false, byzantine.ExhaustOptions{NoSymmetry: true}, 2 + 3*18 + 27, 5, false, false, true},
		{"OM n3 m1 (B3)", byzantine.OM, 3, 1, true, byzantine.ExhaustOptions{}, 0, 4, false, true, true},
		{"SM n3 m1", byzantine.SM, 3, 1, false, byzantine.ExhaustOptions{}, 0, 4, false, false, true},
		{"SM n4 m2", byzantine.SM, 4, 2, false, byzantine.ExhaustOptions{}, 0, 1 + 4 + 3 + 3, false, false, true},
		{"SM n4 m2 without symmetry", byzantine.SM, 4, 2, false, byzantine.ExhaustOptions{NoSymmetry: true}, 0, 1 + 4 + 6, false, false, true},
		// The known violations of OM(2) with five generals and two
		// traitors: silence breaks IC2 (first run), two-faced relays IC1.
		{"OM n5 m2 traitors 1,2", byzantine.OM, 5, 2, true, byzantine.ExhaustOptions{Faulty: []byzantine.ID{1, 2}, MaxRuns: 8000}, 8000, 1, true, true, false},
		// The checker's own check: SM(1) with two traitors is beyond its
		// bound, and the search must find the last-round attack (the
		// commander signs retreat for lieutenant 2 only, traitor 1 relays
		// attack to 3 in the last round, too late for 3 to pass it on).
		{"SM n4 m1 with two traitors", byzantine.SM, 4, 1, true, byzantine.ExhaustOptions{Faulty: []byzantine.ID{0, 1}}, 256, 1, true, false, true},
		{"stopped early", byzantine.SM, 5, 2, false, byzantine.ExhaustOptions{MaxRuns: 100}, 100, 0, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := byzantine.DefaultConfig()
			cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.AllowUnsafe = tt.alg, tt.n, tt.m, tt.unsafe
			res, err := byzantine.Exhaust(t.Context(), cfg, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantRuns != 0 && res.Runs != tt.wantRuns {
				t.Errorf("runs = %d, want %d", res.Runs, tt.wantRuns)
			}
			if tt.wantWhole && res.SetsCovered != tt.wantSets {
				t.Errorf("sets covered = %d, want %d", res.SetsCovered, tt.wantSets)
			}
			if got := res.IC1Violations > 0; got != tt.wantIC1 {
				t.Errorf("IC1 violations %d, want some: %v", res.IC1Violations, tt.wantIC1)
			}
			if got := res.IC2Violations > 0; got != tt.wantIC2 {
				t.Errorf("IC2 violations %d, want some: %v", res.IC2Violations, tt.wantIC2)
			}
			if res.Complete != tt.wantWhole {
				t.Errorf("complete = %v, want %v", res.Complete, tt.wantWhole)
			}
			for _, c := range res.Counterexamples {
				if c.Err == "" || len(c.Sent) == 0 {
					t.Errorf("counterexample without a verdict: %+v", c)
				}
			}
			if len(res.Adversary) == 0 || len(res.NotEnumerated) == 0 {
				t.Errorf("the result does not state what was and was not enumerated")
			}
		})
	}
}

// TestExhaustRefusesUnsafe: outside the bounds the search needs
// AllowUnsafe, as a run does.
func TestExhaustRefusesUnsafe(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Generals, cfg.MaxTraitors = 5, 2
	if _, err := byzantine.Exhaust(t.Context(), cfg, byzantine.ExhaustOptions{}); !errors.Is(err, byzantine.ErrUnsafe) {
		t.Errorf("OM n=5 m=2: err = %v, want ErrUnsafe", err)
	}
	cfg.Generals = 7
	if _, err := byzantine.Exhaust(t.Context(), cfg, byzantine.ExhaustOptions{Faulty: []byzantine.ID{1, 2, 3}}); !errors.Is(err, byzantine.ErrUnsafe) {
		t.Errorf("three traitors with m=2: err = %v, want ErrUnsafe", err)
	}
}

// B3 made exhaustive: with three generals, one traitor can break OM(1).
func ExampleExhaust() {
	cfg := byzantine.DefaultConfig()
	cfg.Generals, cfg.AllowUnsafe = 3, true
	res, err := byzantine.Exhaust(context.Background(), cfg, byzantine.ExhaustOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("runs:", res.Runs, "complete:", res.Complete, "IC2 violations:", res.IC2Violations)
	c := res.Counterexamples[0]
	fmt.Printf("traitors %v sent %v; loyal decisions %v\n", c.Traitors, c.Sent, c.Decisions)
	// Output:
	// runs: 17 complete: true IC2 violations: 2
	// traitors [1] sent [r1: 1 -> 2 nothing (0:1)]; loyal decisions map[2:retreat]
}

// TestExhaustSymmetry: every traitor set searched without the symmetry
// reduction has the runs and violations of the one set that stands for
// its class (same size, commander in or out), so the reduction loses
// nothing for these sizes.
func TestExhaustSymmetry(t *testing.T) {
	tests := []struct {
		alg    byzantine.Algorithm
		n, m   int
		unsafe bool
	}{
		{byzantine.OM, 3, 1, true},
		{byzantine.OM, 4, 2, true},
		{byzantine.SM, 4, 2, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s n%d m%d", tt.alg, tt.n, tt.m), func(t *testing.T) {
			cfg := byzantine.DefaultConfig()
			cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.AllowUnsafe = tt.alg, tt.n, tt.m, tt.unsafe
			sym, err := byzantine.Exhaust(t.Context(), cfg, byzantine.ExhaustOptions{})
			if err != nil {
				t.Fatal(err)
			}
			all, err := byzantine.Exhaust(t.Context(), cfg, byzantine.ExhaustOptions{NoSymmetry: true})
			if err != nil {
				t.Fatal(err)
			}
			class := func(set []byzantine.ID) [2]int {
				c := [2]int{len(set), 0}
				if len(set) > 0 && set[0] == 0 {
					c[1] = 1
				}
				return c
			}
			rep := map[[2]int]byzantine.ExhaustSet{}
			for _, s := range sym.Sets {
				rep[class(s.Traitors)] = s
			}
			if sym.SetsCovered != len(all.Sets) {
				t.Errorf("the reduction covers %d sets, the full search has %d", sym.SetsCovered, len(all.Sets))
			}
			for _, s := range all.Sets {
				r := rep[class(s.Traitors)]
				if s.Runs != r.Runs || s.Violations != r.Violations {
					t.Errorf("set %v: %d runs, %d violating; its class %v: %d, %d", s.Traitors, s.Runs, s.Violations, r.Traitors, r.Runs, r.Violations)
				}
			}
		})
	}
}
