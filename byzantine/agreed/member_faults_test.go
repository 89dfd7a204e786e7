package agreed_test

import (
	"testing"

	"dlm/byzantine"
	"dlm/byzantine/agreed"
)

// TestTooManyFaultsEpochReportsNothing: a general that saw more than m
// peers fail in an epoch could not decide it (its own isolation, a cut
// inbound link say, is then the likely cause), so its "heard" of that
// epoch says nothing about its peers; it must not report them silent in
// the next. Otherwise one traitor claiming the loyal generals dead, plus
// the cut-off general's report, make m+1 reports: every loyal general
// declares the others failed and elects the traitor (regression: Member
// kept the heard of an epoch with too many faults).
func TestTooManyFaultsEpochReportsNothing(t *testing.T) {
	const n, m = 4, 1
	mb := &agreed.Member{ID: 3, N: n, M: m}
	mb.Propose() // the first epoch
	vector := make([]byzantine.Order, n)
	for i := range vector {
		vector[i] = agreed.Proposal{Candidate: true, Heard: []bool{true, true, true, true}}.Encode()
	}
	res := byzantine.InteractiveGeneralResult{
		ID:        3,
		Vector:    vector,
		Instances: make([]byzantine.GeneralResult, n),
		// Nobody could reach it: it heard only itself, in time, and saw
		// every peer late.
		Heard: []bool{false, false, false, true},
	}
	for p := range byzantine.ID(3) {
		res.Instances[0].Faults = append(res.Instances[0].Faults, byzantine.PeerFault{ID: byzantine.InstanceID(0, p), Kind: byzantine.PeerLate})
	}
	if _, err := mb.Observe(res, nil); err != nil {
		t.Fatal(err)
	}
	next := mb.Propose()
	if next.Heard != nil {
		t.Fatalf("after an epoch with %d faults (m = %d), general 3 reports heard %v, want no report", len(res.Faults()), m, next.Heard)
	}

	// What the report would do: with the traitor 2 claiming everyone dead,
	// generals 0 and 1 have m+1 = 2 silent reports, and 2 is elected.
	claim := agreed.Proposal{Candidate: true, Heard: []bool{false, false, true, false}}.Encode()
	loyal := agreed.Proposal{Candidate: true, Heard: []bool{true, true, true, true}}.Encode()
	d := agreed.Decide([]byzantine.Order{loyal, loyal, claim, next.Encode()}, m)
	if got := d.FailedIDs(); len(got) != 0 {
		t.Errorf("loyal generals %v declared failed", got)
	}
	if d.Leader != 0 {
		t.Errorf("leader %d, want 0", d.Leader)
	}

	// With at most m faults it still reports what it heard.
	res.Instances[0].Faults = res.Instances[0].Faults[:m]
	res.Heard = []bool{false, true, true, true}
	if _, err := mb.Observe(res, nil); err != nil {
		t.Fatal(err)
	}
	if got := mb.Propose().Heard; len(got) != n || got[0] {
		t.Errorf("after an epoch with m faults, heard %v, want %v", got, res.Heard)
	}
}
