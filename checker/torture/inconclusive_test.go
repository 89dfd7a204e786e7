package torture

import (
	"dlm/checker"
	"math"
	"strings"
	"testing"
	"time"
)

// TestInconclusive: an empty history, a check that hit its limit and values
// out of range give the distinct verdict "inconclusive", never "as
// promised".
func TestInconclusive(t *testing.T) {
	ok := func(id int, lock string, start, end, ttl int64) checker.Op {
		return checker.Op{ID: id, Client: "c" + lock, Resource: "r", Kind: checker.Acquire, Lock: lock, Start: start, End: end, OK: true, TTL: ttl, Until: start + ttl}
	}
	overflow := ok(1, "a", 10, 20, math.MaxInt64-5)
	overflow.Until = math.MinInt64 + 4 // what start + ttl wraps to
	tests := []struct {
		name string
		h    *checker.History
		want string
	}{
		{"empty", &checker.History{}, "no acquisition"},
		{"only failed attempts", &checker.History{Ops: []checker.Op{{ID: 1, Client: "c", Resource: "r", Kind: checker.Acquire, Lock: "a", Start: 1, End: 2}}}, "no acquisition"},
		{"ttl overflows", &checker.History{Ops: []checker.Op{overflow, ok(2, "b", 30, 40, int64(time.Second))}}, "out of range"},
		{"negative time", &checker.History{Ops: []checker.Op{ok(1, "a", -50, 20, int64(time.Second))}}, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, cfg := range []Config{DefaultConfig("split-votes"), DefaultConfig("restart-without-persistence")} {
				rep := Analyze(cfg, tt.h)
				if !rep.Inconclusive || rep.Matches {
					t.Errorf("%s: inconclusive %v, matches %v (%s); want inconclusive, not matching", cfg.Scenario, rep.Inconclusive, rep.Matches, rep.Outcome)
				}
				if strings.Contains(rep.Outcome, "as promised") || strings.Contains(rep.Outcome, "as expected") || !strings.Contains(rep.Outcome, tt.want) {
					t.Errorf("%s: outcome %q, want an inconclusive one that says %q", cfg.Scenario, rep.Outcome, tt.want)
				}
			}
		})
	}
	t.Run("no grant, liveness violated", func(t *testing.T) {
		// Wanted for 5s, granted to nobody, no fault: that is evidence.
		h := &checker.History{Ops: []checker.Op{{ID: 1, Client: "c", Resource: "r", Kind: checker.Acquire, Lock: "a", Start: 0, End: int64(5 * time.Second)}}}
		rep := Analyze(DefaultConfig("split-votes"), h)
		if rep.Inconclusive || rep.Matches || !strings.Contains(rep.Outcome, "liveness violated") {
			t.Errorf("inconclusive %v, matches %v, outcome %q; want the liveness violation reported", rep.Inconclusive, rep.Matches, rep.Outcome)
		}
	})
	t.Run("mutex on overflow", func(t *testing.T) {
		if got := checker.CheckMutex(tests[2].h); got.Verdict != checker.Unknown {
			t.Errorf("CheckMutex = %v, want unknown: a ttl that overflows decides nothing", got)
		}
	})
}

// TestInconclusiveTimeLimit: a linearizability check that ran out of time
// makes the report inconclusive.
func TestInconclusiveTimeLimit(t *testing.T) {
	h := &checker.History{Ops: []checker.Op{{ID: 1, Client: "c", Resource: "r", Kind: checker.Acquire, Lock: "a", Start: 1, End: 2, OK: true, TTL: 100, Until: 100}}}
	rep := analyze(DefaultConfig("split-votes"), h, checkers{linearizable: func(*checker.History) checker.Result {
		return checker.Result{Check: "linearizable", Verdict: checker.Unknown, Counterexample: "porcupine found no answer within 10s"}
	}})
	if !rep.Inconclusive || rep.Matches || !strings.Contains(rep.Outcome, "linearizable") {
		t.Errorf("inconclusive %v, matches %v, outcome %q; want inconclusive naming the linearizable check", rep.Inconclusive, rep.Matches, rep.Outcome)
	}
}
