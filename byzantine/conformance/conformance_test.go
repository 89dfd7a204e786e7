package conformance

import (
	"context"
	"testing"

	"dlm/byzantine"
)

// TestRunCasesRunsAgainWhenALinkFailsUnderLoad: over a real transport on a
// loaded machine, a link between two loyal generals can run late or fail,
// and each end then counts the other faulty: with a configured crash that
// is more faulty generals than m, and the decisions prove nothing (a dlm
// process exits 3 for it), agreeing or not. RunCases runs such a case
// again, as it does a run out of time, instead of reporting IC1 and IC2
// violated. The runner here gives the loaded run seen on a 2-core machine
// first (general 2 crashed, general 3 late to general 1 and general 1
// absent for general 3, general 1 deciding retreat), then a clean one.
func TestRunCasesRunsAgainWhenALinkFailsUnderLoad(t *testing.T) {
	calls := 0
	run := func(ctx context.Context, cfg byzantine.Config) (*byzantine.Result, error) {
		calls++
		res, err := byzantine.Run(ctx, cfg)
		if err != nil || calls > 1 {
			return res, err
		}
		g1, g3 := &res.Generals[1], &res.Generals[3]
		g1.Decision = byzantine.Retreat
		g1.Faults = append(g1.Faults, byzantine.PeerFault{ID: 3, Kind: byzantine.PeerLate, Round: 1})
		g3.Faults = append(g3.Faults, byzantine.PeerFault{ID: 1, Kind: byzantine.PeerAbsent, Round: 1})
		return res, nil
	}
	RunCases(t, run, Select("OM/n4m1/lieutenant-crashes-round1"))
	if calls != 2 {
		t.Errorf("the case ran %d times, want 2 (once more after the run with more than m faulty generals)", calls)
	}
}
