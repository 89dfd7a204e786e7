package byzantine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/byzantine"
)

// chanNet is an in-process Endpoint network over channels, FIFO per
// receiver, for testing RunGeneral's timers under synctest.
type chanNet struct {
	inbox []chan byzantine.Inbound
}

type chanEndpoint struct {
	net *chanNet
	id  byzantine.ID
}

func newChanNet(n int) *chanNet {
	c := &chanNet{}
	for range n {
		c.inbox = append(c.inbox, make(chan byzantine.Inbound, 4096))
	}
	return c
}

func (e chanEndpoint) Send(_ context.Context, m byzantine.Message) error {
	m.From = e.id
	e.net.inbox[m.To] <- byzantine.Inbound{From: e.id, Message: &m}
	return nil
}

func (e chanEndpoint) EndRound(_ context.Context, r int) error {
	for p := range e.net.inbox {
		if byzantine.ID(p) != e.id {
			e.net.inbox[p] <- byzantine.Inbound{From: e.id, Marker: true, EndOfRound: r}
		}
	}
	return nil
}

func (e chanEndpoint) Recv(ctx context.Context) (byzantine.Inbound, error) {
	select {
	case ev := <-e.net.inbox[e.id]:
		return ev, nil
	case <-ctx.Done():
		return byzantine.Inbound{}, ctx.Err()
	}
}

// runTimed runs cfg with RunGeneral over chanNet, one goroutine per general.
func runTimed(t *testing.T, cfg byzantine.Config) *byzantine.Result {
	t.Helper()
	return runTimedAt(t, cfg, time.Now())
}

// runTimedAt is runTimed with the rounds timed from start.
func runTimedAt(t *testing.T, cfg byzantine.Config, start time.Time) *byzantine.Result {
	t.Helper()
	net := newChanNet(cfg.Generals)
	priv, pub := byzantine.DeriveKeys(cfg.Seed, cfg.Generals)
	results := make([]byzantine.GeneralResult, cfg.Generals)
	errs := make([]error, cfg.Generals)
	var wg sync.WaitGroup
	for i := range cfg.Generals {
		g, err := byzantine.NewGeneral(cfg, byzantine.ID(i), byzantine.Keyring{Private: priv[i], Public: pub})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			results[i], errs[i] = byzantine.RunGeneral(t.Context(), g, chanEndpoint{net, byzantine.ID(i)}, start, nil)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return byzantine.Assemble(cfg, results)
}

// TestRunGeneralTimers checks RunGeneral's rounds in fake time (synctest):
// with every general answering, rounds end on the end-of-round markers and
// no time passes; a silent general costs exactly one timeout per round
// (A3); a late general's messages are rejected.
func TestRunGeneralTimers(t *testing.T) {
	tests := []struct {
		name        string
		cfg         byzantine.Config
		wantElapsed time.Duration
		wantLate    bool
	}{
		{"loyal OM: markers end the rounds", config(byzantine.OM, 4, 1), 0, false},
		{"loyal SM: markers end the rounds", config(byzantine.SM, 5, 2), 0, false},
		{"silent lieutenant: every round times out", config(byzantine.OM, 4, 1, byzantine.Traitor{ID: 2, Strategy: byzantine.Silent}), 3 * 500 * time.Millisecond, false},
		{"silent commander, SM", config(byzantine.SM, 4, 1, byzantine.Traitor{ID: 0, Strategy: byzantine.Silent}), 3 * 500 * time.Millisecond, false},
		{"late lieutenant: rejected after its marker", config(byzantine.OM, 7, 2, byzantine.Traitor{ID: 3, Strategy: byzantine.Late}), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				res := runTimed(t, tt.cfg)
				// A timed-out round also waits a millisecond for events
				// already queued before it closes.
				if el := time.Since(t0); el < tt.wantElapsed || el > tt.wantElapsed+10*time.Millisecond {
					t.Errorf("took %v of fake time, want %v", el, tt.wantElapsed)
				}
				if err := res.Verify(); err != nil {
					t.Errorf("Verify() = %v", err)
				}
				if got := res.Rejected[byzantine.RejectLate] > 0; got != tt.wantLate {
					t.Errorf("late rejections = %v, want %v", res.Rejected, tt.wantLate)
				}
				mem := mustRun(t, tt.cfg)
				if !jsonEqualDecisions(res, mem) {
					t.Errorf("decisions %v differ from the in-memory run %v", res.Decisions(), mem.Decisions())
				}
			})
		})
	}
}

// TestRunGeneralOutOfTime: generals whose schedule already passed (a start
// time in the past) report every round they could not keep, and
// the result says the run ran out of time, instead of deciding silently
// on refused messages (before: four loyal generals, the commander ordered
// attack, the lieutenants decided retreat and nothing said why). A run on
// schedule reports nothing.
func TestRunGeneralOutOfTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config(byzantine.OM, 4, 1)
		res := runTimedAt(t, cfg, time.Now().Add(-10*cfg.RoundTimeout))
		if got := res.OutOfTime(); len(got) != 4 {
			t.Errorf("OutOfTime() = %v, want all four generals", got)
		}
		for _, g := range res.Generals {
			if len(g.Overran) != cfg.MaxTraitors+1 {
				t.Errorf("general %d overran rounds %v, want 0..%d", g.ID, g.Overran, cfg.MaxTraitors)
			}
		}
		if got := runTimed(t, cfg).OutOfTime(); len(got) != 0 {
			t.Errorf("a run on schedule: OutOfTime() = %v, want none", got)
		}
	})
}

// slowEndpoint stamps every event with its arrival time and makes its
// general take the first one only after a pause longer than the round
// timeout: a receiver that falls behind the schedule.
type slowEndpoint struct {
	chanEndpoint
	pause  time.Duration
	paused *bool
}

func (e slowEndpoint) Send(ctx context.Context, m byzantine.Message) error {
	m.From = e.id
	e.net.inbox[m.To] <- byzantine.Inbound{From: e.id, Message: &m, At: time.Now()}
	return nil
}

func (e slowEndpoint) EndRound(_ context.Context, r int) error {
	for p := range e.net.inbox {
		if byzantine.ID(p) != e.id {
			e.net.inbox[p] <- byzantine.Inbound{From: e.id, Marker: true, EndOfRound: r, At: time.Now()}
		}
	}
	return nil
}

func (e slowEndpoint) Recv(ctx context.Context) (byzantine.Inbound, error) {
	if !*e.paused {
		*e.paused = true
		time.Sleep(e.pause)
	}
	if err := ctx.Err(); err != nil {
		return byzantine.Inbound{}, err // a deadline passed wins over a queued event
	}
	return e.chanEndpoint.Recv(ctx)
}

// runSlow runs cfg over chanNet with general slow held back for pause
// before it takes its first event, every event stamped with its arrival.
func runSlow(t *testing.T, cfg byzantine.Config, slow byzantine.ID, pause time.Duration) []byzantine.GeneralResult {
	t.Helper()
	net := newChanNet(cfg.Generals)
	start := time.Now()
	results := make([]byzantine.GeneralResult, cfg.Generals)
	var wg sync.WaitGroup
	for i := range cfg.Generals {
		g, err := byzantine.NewGeneral(cfg, byzantine.ID(i), byzantine.Keyring{})
		if err != nil {
			t.Fatal(err)
		}
		ep := slowEndpoint{chanEndpoint{net, byzantine.ID(i)}, 0, new(bool)}
		if byzantine.ID(i) == slow {
			ep.pause = pause
		}
		wg.Go(func() {
			results[i], _ = byzantine.RunGeneral(t.Context(), g, ep, start, nil)
		})
	}
	wg.Wait()
	return results
}

// TestRunGeneralTakesWhatArrivedInTime: the round's deadline closes it to
// what arrives later, not to what arrived before it and waited for a busy
// general (the transport's arrival stamp is what was measured). Before,
// general 1, held back one and a half round timeouts, refused the
// commander's order as late.
func TestRunGeneralTakesWhatArrivedInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config(byzantine.OM, 4, 1)
		results := runSlow(t, cfg, 1, 3*cfg.RoundTimeout/2)
		res := byzantine.Assemble(cfg, results)
		if err := res.Verify(); err != nil {
			t.Errorf("Verify() = %v", err)
		}
		if n := results[1].Stats.Rejected[byzantine.RejectLate]; n != 0 {
			t.Errorf("general 1 refused %d messages as late; they arrived in time", n)
		}
		if got := res.OutOfTime(); len(got) != 0 {
			t.Errorf("OutOfTime() = %v, want none: general 1 caught up within round 1", got)
		}
	})
}

// TestRunGeneralSlowReceiverReports: a general that takes messages after
// their round's deadline, though they arrived in time, reports the round
// in Overran (it refused its peers' messages as late by its own fault).
func TestRunGeneralSlowReceiverReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config(byzantine.OM, 4, 1)
		results := runSlow(t, cfg, 1, 3*cfg.RoundTimeout)
		res := byzantine.Assemble(cfg, results)
		t.Logf("general 1 overran %v", results[1].Overran)
		if got := results[1].Overran; len(got) == 0 {
			t.Errorf("the slow general 1 overran %v, want its late rounds listed", got)
		}
		if got := res.OutOfTime(); !slices.Contains(got, 1) {
			t.Errorf("OutOfTime() = %v, want general 1", got)
		}
	})
}

func jsonEqualDecisions(a, b *byzantine.Result) bool {
	da, db := a.Decisions(), b.Decisions()
	if len(da) != len(db) {
		return false
	}
	for k, v := range da {
		if db[k] != v {
			return false
		}
	}
	return true
}

// TestDecisionIsSentOrRetreat: every loyal decision is one of the orders
// actually sent in the run, or RETREAT; there is no third outcome (B5, B8).
func TestDecisionIsSentOrRetreat(t *testing.T) {
	for _, alg := range []byzantine.Algorithm{byzantine.OM, byzantine.SM} {
		for seed := int64(1); seed <= 30; seed++ {
			n, m := 7, 2
			faulty := []byzantine.Traitor{{ID: 0, Strategy: byzantine.RandomOrders}, {ID: byzantine.ID(1 + seed%6), Strategy: byzantine.Strategies()[seed%6]}}
			cfg := config(alg, n, m, faulty...)
			cfg.Seed, cfg.Order, cfg.Trace = seed, "hold", true
			if seed%2 == 0 {
				cfg.Majority = byzantine.Median
			}
			res := mustRun(t, cfg)
			sent := map[byzantine.Order]bool{byzantine.Retreat: true}
			for _, ev := range res.Trace {
				sent[ev.Message.Order] = true
			}
			for id, d := range res.Decisions() {
				if !sent[d] {
					t.Errorf("%s: general %d decided %q; orders sent: %v", describe(cfg), id, d, sent)
				}
			}
		}
	}
}

// TestRunGeneralStopsOnCancel: a general whose context ends mid-round
// returns ErrStopped together with the context's error.
func TestRunGeneralStopsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config(byzantine.OM, 4, 1)
		net := newChanNet(4)
		g, err := byzantine.NewGeneral(cfg, 1, byzantine.Keyring{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err = byzantine.RunGeneral(ctx, g, chanEndpoint{net, 1}, time.Now(), nil)
		if !errors.Is(err, byzantine.ErrStopped) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("RunGeneral = %v, want ErrStopped and context.DeadlineExceeded", err)
		}
	})
}
