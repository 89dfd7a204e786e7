package agreed_test

import (
	"slices"
	"testing"

	"dlm/byzantine"
	"dlm/byzantine/agreed"
)

// TestOutOfTimeEpochReportsNothing: a general that did not keep the
// schedule in an epoch (its process paused over a deadline, say) refused
// its peers' values as late through its own fault, so its "heard" of that
// epoch says nothing about them; it must not report them silent in the
// next. Otherwise m traitors that claim the loyal generals dead, plus one
// loyal general that was paused once, make m+1 reports: every loyal
// general declares the others failed, and with them out of the way a
// traitor can be elected leader (regression: Member reported the heard of
// an out-of-time epoch).
func TestOutOfTimeEpochReportsNothing(t *testing.T) {
	const n, m = 4, 1
	mb := &agreed.Member{ID: 2, N: n, M: m}
	mb.Propose() // the first epoch
	vector := make([]byzantine.Order, n)
	for i := range vector {
		vector[i] = agreed.Proposal{Candidate: true, Heard: []bool{true, true, true, true}}.Encode()
	}
	res := byzantine.InteractiveGeneralResult{
		ID:        2,
		Vector:    vector,
		Instances: make([]byzantine.GeneralResult, n),
		// Paused over round 0's deadline: the values of 0 and 1 came in
		// time, and it refused them as late.
		Heard: []bool{false, false, true, true},
	}
	res.Instances[0].Overran = []int{0}
	if _, err := mb.Observe(res, nil); err != nil {
		t.Fatal(err)
	}
	next := mb.Propose()
	if next.Heard != nil {
		t.Fatalf("after an epoch it ran out of time in, general 2 reports heard %v, want no report", next.Heard)
	}

	// What the report would do: with the traitor 3 claiming everyone dead,
	// generals 0 and 1 have m+1 = 2 silent reports.
	claim := agreed.Proposal{Candidate: true, Heard: []bool{false, false, false, true}}.Encode()
	loyal := agreed.Proposal{Candidate: true, Heard: []bool{true, true, true, true}}.Encode()
	d := agreed.Decide([]byzantine.Order{loyal, loyal, next.Encode(), claim}, m)
	if got := d.FailedIDs(); len(got) != 0 {
		t.Errorf("loyal generals %v declared failed", got)
	}
	if d.Leader != 0 {
		t.Errorf("leader %d, want 0", d.Leader)
	}

	// An epoch kept in time still reports what it heard.
	res.Instances[0].Overran = nil
	if _, err := mb.Observe(res, nil); err != nil {
		t.Fatal(err)
	}
	if got := mb.Propose().Heard; !slices.Equal(got, res.Heard) {
		t.Errorf("after an epoch in time, heard %v, want %v", got, res.Heard)
	}
}
