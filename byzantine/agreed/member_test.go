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
		for e, r := range reps {
			if want := e != 3; r.Proposed != want {
				t.Errorf("epoch %d: Proposed %v, want %v (an epoch skipped has no proposal)", e, r.Proposed, want)
			}
		}
		if reps[4].Decision == nil || reps[4].Decision.Leader != 0 {
			t.Errorf("epoch 4: %+v, want a decision with leader 0", reps[4])
		}
		if !proposals[0].HasClock || !proposals[0].Candidate {
			t.Errorf("proposal %+v lacks the clock or the candidacy", proposals[0])
		}
	})
}

// TestMemberJoinsLate: a member that begins after its team's schedule
// started (a general restarted after a crash, given the same start) runs
// from the first epoch it can still run, with the team's numbers, and
// reports nothing of the epochs before it.
func TestMemberJoinsLate(t *testing.T) {
	s := agreed.Schedule{Start: time.Unix(1000, 0), Period: 10 * time.Second, Lead: time.Second}
	for _, tt := range []struct {
		after time.Duration // from the schedule's start
		want  int
	}{
		{-time.Hour, 0},
		{0, 0},
		{time.Second, 0}, // as late as a member may wake for epoch 0
		{time.Second + 1, 1},
		{11 * time.Second, 1},
		{11*time.Second + 1, 2},
		{35 * time.Second, 4}, // epoch 3 began 5 s ago
	} {
		if got := agreed.JoinsAt(s, s.Start.Add(tt.after)); got != tt.want {
			t.Errorf("JoinsAt(start%+v) = %d, want %d", tt.after, got, tt.want)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		const n = 4
		s := agreed.Schedule{Start: time.Now().Add(-25 * time.Second), Period: 10 * time.Second, Lead: time.Second, Epochs: 5}
		mb := &agreed.Member{ID: 2, N: n, M: 1}
		run := func(ctx context.Context, st time.Time, value byzantine.Order) (byzantine.InteractiveGeneralResult, error) {
			vec := make([]byzantine.Order, n)
			for i := range vec {
				vec[i] = agreed.Proposal{Heard: []bool{true, true, true, true}}.Encode()
			}
			return byzantine.InteractiveGeneralResult{ID: 2, Vector: vec, Heard: []bool{true, true, true, true}}, nil
		}
		var epochs []int
		if err := mb.Run(t.Context(), s, run, func(r agreed.Report) error {
			if !r.Proposed || r.Error != "" {
				t.Errorf("epoch %d: %+v, want it run", r.Epoch, r)
			}
			epochs = append(epochs, r.Epoch)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if want := []int{3, 4}; !slices.Equal(epochs, want) {
			t.Errorf("epochs %v, want %v: the team's epochs still to begin, numbered as the team's", epochs, want)
		}
	})
}
