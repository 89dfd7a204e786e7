package byzantine_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"dlm/byzantine"
)

// subsets calls f with every subset of {0..n-1} of at most k elements.
func subsets(n, k int, f func([]byzantine.ID)) {
	var rec func(start int, cur []byzantine.ID)
	rec = func(start int, cur []byzantine.ID) {
		f(slices.Clone(cur))
		if len(cur) == k {
			return
		}
		for i := start; i < n; i++ {
			rec(i+1, append(cur, byzantine.ID(i)))
		}
	}
	rec(0, nil)
}

// assignments calls f with every assignment of strategies to ids.
func assignments(ids []byzantine.ID, strategies []byzantine.Strategy, f func([]byzantine.Traitor)) {
	cur := make([]byzantine.Traitor, len(ids))
	var rec func(i int)
	rec = func(i int) {
		if i == len(ids) {
			f(slices.Clone(cur))
			return
		}
		for _, s := range strategies {
			cur[i] = byzantine.Traitor{ID: ids[i], Strategy: s}
			rec(i + 1)
		}
	}
	rec(0)
}

// randomTraitors draws up to m traitors with random strategies.
func randomTraitors(r *rand.Rand, n, m int, strategies []byzantine.Strategy) []byzantine.Traitor {
	k := r.IntN(m + 1)
	ids := r.Perm(n)[:k]
	slices.Sort(ids)
	var out []byzantine.Traitor
	for _, id := range ids {
		out = append(out, byzantine.Traitor{ID: byzantine.ID(id), Strategy: strategies[r.IntN(len(strategies))]})
	}
	return out
}

// mustRun runs cfg in memory and fails the test on error.
func mustRun(t *testing.T, cfg byzantine.Config) *byzantine.Result {
	t.Helper()
	res, err := byzantine.Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Run(%s): %v", describe(cfg), err)
	}
	return res
}

func describe(cfg byzantine.Config) string {
	return fmt.Sprintf("%s n=%d m=%d order=%s majority=%s faulty=%v seed=%d", cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.Order, cfg.Majority, cfg.Faulty, cfg.Seed)
}

// checkSound checks IC1 and IC2 (B1) and that every loyal decision is an
// order some general sent, or RETREAT: there is no third outcome.
func checkSound(t *testing.T, cfg byzantine.Config, res *byzantine.Result) {
	t.Helper()
	if err := res.Verify(); err != nil {
		t.Fatalf("%s: %v", describe(cfg), err)
	}
	sent := map[byzantine.Order]bool{byzantine.Retreat: true, cfg.Order: true}
	for _, o := range []byzantine.Order{byzantine.Attack, byzantine.Flip(cfg.Order)} {
		sent[o] = true // the orders traitors can send
	}
	for id, d := range res.Decisions() {
		if !sent[d] {
			t.Fatalf("%s: general %d decided %q, not an order sent nor RETREAT", describe(cfg), id, d)
		}
	}
}
