package byzantine_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"dlm/byzantine"
)

// TestExhaustInteractive: the exhaustive search over the private values
// completes without a violation at the bounds (so no behaviour of its
// adversary breaks the vector conditions of any interactive run with these
// values), and below the bound finds the violations.
func TestExhaustInteractive(t *testing.T) {
	for _, tc := range []struct {
		name     string
		alg      byzantine.Algorithm
		n, m     int
		unsafe   bool
		wantRuns int
		violated bool
	}{
		{"OM n=4 m=1", byzantine.OM, 4, 1, false, 401, false},
		{"SM n=3 m=1", byzantine.SM, 3, 1, false, 0, false},
		{"OM n=3 m=1 below the bound", byzantine.OM, 3, 1, true, 49, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ic := icConfig(tc.alg, tc.n, tc.m)
			ic.Config.AllowUnsafe = tc.unsafe
			res, err := byzantine.ExhaustInteractive(t.Context(), ic, byzantine.ExhaustOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Complete {
				t.Fatalf("search incomplete after %d runs", res.Runs)
			}
			if tc.wantRuns > 0 && res.Runs != tc.wantRuns {
				t.Errorf("%d runs, want %d", res.Runs, tc.wantRuns)
			}
			if got := res.Violations() > 0; got != tc.violated {
				t.Errorf("violations %d, want violated %v", res.Violations(), tc.violated)
			}
			want := append(slices.Clone(ic.Values), byzantine.Retreat)
			if !slices.Equal(res.Domain, want) {
				t.Errorf("domain %v, want %v", res.Domain, want)
			}
			if !strings.Contains(res.Adversary[0], "every instance of every interactive run") {
				t.Errorf("adversary does not say what it covers: %q", res.Adversary[0])
			}
		})
	}
}

// TestInteractiveViolationIsAnInstanceViolation checks the argument that
// lets the one-commander search stand for interactive consistency, on
// every traitor set under every named strategy below OM's bound, where
// the vectors do break: each entry that breaks IC1 or IC2 of the vectors
// is the entry of an instance that breaks IC1 or IC2 of one commander;
// that instance decides, run alone as a one-commander run (its ids
// renamed), what it decided inside the interactive run; and the exhaustive
// search of that instance's traitor set, over the private values and the
// orders the traitors sent, finds a violation.
func TestInteractiveViolationIsAnInstanceViolation(t *testing.T) {
	const n, m = 3, 1
	violating := 0
	for _, s := range byzantine.OralStrategies() {
		for traitor := range n {
			ic := icConfig(byzantine.OM, n, m, byzantine.Traitor{ID: byzantine.ID(traitor), Strategy: s})
			ic.Config.AllowUnsafe = true
			res := mustRunIC(t, ic)
			var ve *byzantine.VectorError
			if err := res.Verify(); !errors.As(err, &ve) {
				continue
			}
			violating++
			for _, e := range ve.Entries {
				inst := e.Entry
				if res.Instances[inst].Verify() == nil {
					t.Errorf("traitor %d (%s): the vectors break at entry %d (%+v), but instance %d satisfies IC1 and IC2", traitor, s, inst, e, inst)
				}
				alone, err := byzantine.Run(t.Context(), ic.Instance(inst))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := alone.Decisions(), res.Instances[inst].Decisions(); !maps.Equal(got, want) {
					t.Errorf("traitor %d (%s), instance %d: run alone decides %v, inside the interactive run %v", traitor, s, inst, got, want)
				}
				set := []byzantine.ID{byzantine.InstanceID(inst, byzantine.ID(traitor))}
				domain := append(slices.Clone(ic.Values), byzantine.Retreat, byzantine.Attack) // flip sends attack
				ex, err := byzantine.Exhaust(t.Context(), ic.Instance(inst), byzantine.ExhaustOptions{Faulty: set, Domain: domain})
				if err != nil {
					t.Fatal(err)
				}
				if ex.Violations() == 0 {
					t.Errorf("traitor %d (%s): the vectors break at entry %d, but the search of instance %d's traitor set %v finds nothing", traitor, s, inst, inst, set)
				}
			}
		}
	}
	if violating == 0 {
		t.Fatal("no named strategy broke the vectors below the bound: the test checked nothing")
	}
}
