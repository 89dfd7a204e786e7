package byzantine_test

import (
	"context"
	"testing"
	"time"

	"dlm/byzantine"
)

// TestExhaustBudgetReachesEverySet: with a budget far below the search,
// every traitor set still gets runs, so the violation that two traitors
// find at once in an unsafe OM(2) with five generals is found, and each
// set says how much of it was covered (regression: the sets were searched
// one after the other and the first one-traitor set spent the whole
// budget, so the result read "no violation found", INCOMPLETE).
func TestExhaustBudgetReachesEverySet(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Generals, cfg.MaxTraitors, cfg.AllowUnsafe = 5, 2, true
	res, err := byzantine.Exhaust(t.Context(), cfg, byzantine.ExhaustOptions{MaxRuns: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete {
		t.Fatalf("search of %d runs says it is complete", res.Runs)
	}
	if res.IC2Violations == 0 {
		t.Errorf("no IC2 violation found in %d runs; sets %+v", res.Runs, res.Sets)
	}
	sizes := map[int]bool{}
	for _, s := range res.Sets {
		if s.Runs == 0 {
			t.Errorf("set %v got no run", s.Traitors)
		}
		sizes[len(s.Traitors)] = true
		if s.Complete != (s.Covered == 1) || s.Covered <= 0 || s.Covered > 1 {
			t.Errorf("set %v: complete %v, covered %v", s.Traitors, s.Complete, s.Covered)
		}
	}
	if !sizes[0] || !sizes[1] || !sizes[2] {
		t.Errorf("sets searched %+v, want sets of every size up to m", res.Sets)
	}
}

// TestExhaustStopsWithinBudget: a search whose every run is large (OM(5)
// with 22 generals) ends soon after its context does, inside a run as
// well as between runs (regression: a 1 s budget ran 12.3 s, the budget
// being checked only between runs).
func TestExhaustStopsWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("large runs")
	}
	cfg := byzantine.DefaultConfig()
	cfg.Generals, cfg.MaxTraitors = 22, 5
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	res, err := byzantine.Exhaust(ctx, cfg, byzantine.ExhaustOptions{})
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete {
		t.Errorf("search says it is complete")
	}
	if took > 5*time.Second {
		t.Errorf("a 300ms budget took %v", took)
	}
	t.Logf("300ms budget: returned after %v, %d runs", took, res.Runs)
}
