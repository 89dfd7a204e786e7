package agreed_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/agreed"
)

// TestMemberSchedule runs a Member over a fake epoch runner under
// synctest: each epoch wakes Lead before its start; the heard report of
// an epoch is proposed in the next (all heard before the first, none after
// an epoch that failed); an epoch whose run overran the next one's start
// by more than Lead is skipped with a report saying so.
func TestMemberSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 4
		start := time.Now().Add(time.Minute)
		s := agreed.Schedule{Start: start, Period: 10 * time.Second, Lead: time.Second, Epochs: 5}
		mb := &agreed.Member{ID: 1, N: n, M: 1, Candidate: true, Clock: func() int64 { return time.Now().UnixNano() }}
		var woke []time.Duration
		var proposals []agreed.Proposal
		run := func(ctx context.Context, st time.Time, value byzantine.Order) (byzantine.InteractiveGeneralResult, error) {
			woke = append(woke, time.Since(st))
			p, err := agreed.Parse(value, n)
			if err != nil {
				t.Fatal(err)
			}
			proposals = append(proposals, p)
			e := int(st.Sub(start) / s.Period)
			switch e {
			case 1:
				return byzantine.InteractiveGeneralResult{}, errors.New("no listener")
			case 2:
				time.Sleep(s.Period + 3*s.Lead) // ends 2 s after epoch 3's start
			}
			vec := make([]byzantine.Order, n)
			for i := range vec {
				vec[i] = agreed.Proposal{Candidate: true, Heard: []bool{true, true, true, true}}.Encode()
			}
			vec[1] = value
			return byzantine.InteractiveGeneralResult{ID: 1, Vector: vec, Heard: []bool{false, true, true, e != 0}}, nil
		}
		var reps []agreed.Report
		if err := mb.Run(t.Context(), s, run, func(r agreed.Report) error { reps = append(reps, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(reps) != 5 {
			t.Fatalf("%d reports, want 5", len(reps))
		}
		for _, w := range woke {
			if w != -s.Lead {
				t.Errorf("woke %v from the epoch's start, want %v", w, -s.Lead)
			}
		}
		if got := proposals[0].Heard; !slices.Equal(got, []bool{true, true, true, true}) {
			t.Errorf("epoch 0 proposes heard %v, want all", got)
		}
		if got := proposals[1].Heard; !slices.Equal(got, []bool{false, true, true, false}) {
			t.Errorf("epoch 1 proposes heard %v, want epoch 0's", got)
		}
		if proposals[2].Heard != nil {
			t.Errorf("epoch 2 proposes heard %v after a failed epoch, want no report", proposals[2].Heard)
		}
		if reps[1].Error == "" || reps[1].Decision != nil {
			t.Errorf("epoch 1: %+v, want an error and no decision", reps[1])
		}
		if reps[3].Error == "" || len(proposals) != 4 {
			t.Errorf("epoch 3: %+v after an overrun (%d runs), want it skipped", reps[3], len(proposals))
		}
		if reps[4].Decision == nil || reps[4].Decision.Leader != 0 {
			t.Errorf("epoch 4: %+v, want a decision with leader 0", reps[4])
		}
		if !proposals[0].HasClock || !proposals[0].Candidate {
			t.Errorf("proposal %+v lacks the clock or the candidacy", proposals[0])
		}
	})
}
