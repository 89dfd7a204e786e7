package byzantine_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"dlm/byzantine"
)

// TestLateTraitorIsNotTheReceiversLateness: a traitor that sends a round's
// messages after its own end-of-round marker (Late) is late itself; the
// loyal generals that refuse them kept the schedule and must not say they
// ran out of time.
func TestLateTraitorIsNotTheReceiversLateness(t *testing.T) {
	for _, tc := range []struct {
		alg     byzantine.Algorithm
		n, m    int
		traitor byzantine.ID
	}{
		{byzantine.OM, 4, 1, 0},
		{byzantine.OM, 4, 1, 3},
		{byzantine.OM, 7, 2, 4},
		{byzantine.SM, 4, 2, 0},
		{byzantine.SM, 4, 2, 2},
	} {
		t.Run(fmt.Sprintf("%s/n=%d/traitor=%d", tc.alg, tc.n, tc.traitor), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := byzantine.DefaultConfig()
				cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = tc.alg, tc.n, tc.m
				cfg.Faulty = []byzantine.Traitor{{ID: tc.traitor, Strategy: byzantine.Late}}
				res := runTimed(t, cfg)
				if late := res.OutOfTime(); len(late) > 0 {
					for _, id := range late {
						t.Errorf("loyal general %d says it ran out of time in rounds %v", id, res.Generals[id].Overran)
					}
				}
				if err := res.Verify(); err != nil {
					t.Error(err)
				}
			})
		})
	}
}
