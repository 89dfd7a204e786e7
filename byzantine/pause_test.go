package byzantine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/byzantine"
)

// lateCommanderEndpoint is a traitorous commander that controls its timing:
// its round-0 message to general 3 and its marker to 3 leave only at late;
// it sends no markers after round 0, so every loyal general waits for the
// deadline of the later rounds. Events are stamped when sent.
type lateCommanderEndpoint struct {
	slowEndpoint
	late time.Time
	wg   *sync.WaitGroup
	mu   *sync.Mutex
	held *[]byzantine.Message
}

func (e lateCommanderEndpoint) Send(ctx context.Context, m byzantine.Message) error {
	if m.Round == 0 && m.To == 3 {
		e.mu.Lock()
		*e.held = append(*e.held, m)
		e.mu.Unlock()
		return nil
	}
	return e.slowEndpoint.Send(ctx, m)
}

func (e lateCommanderEndpoint) EndRound(ctx context.Context, r int) error {
	if r != 0 {
		return nil
	}
	for _, p := range []byzantine.ID{1, 2} {
		e.net.inbox[p] <- byzantine.Inbound{From: e.id, Marker: true, EndOfRound: 0, At: time.Now()}
	}
	e.wg.Go(func() {
		time.Sleep(time.Until(e.late))
		e.mu.Lock()
		held := *e.held
		e.mu.Unlock()
		for _, m := range held {
			_ = e.slowEndpoint.Send(ctx, m)
		}
		e.net.inbox[3] <- byzantine.Inbound{From: e.id, Marker: true, EndOfRound: 0, At: time.Now()}
	})
	return nil
}

// pausedEndpoint stands for a general whose whole process is stopped from
// from to until (SIGSTOP, a machine that does not run it): its transport
// reads nothing then, and stamps what it reads (Inbound.At) when it reads
// it. When the pause ends, deadlineFirst says whether the general sees its
// round's deadline pass before the events that waited.
type pausedEndpoint struct {
	chanEndpoint
	from, until   time.Time
	deadlineFirst bool
}

func (e pausedEndpoint) Recv(ctx context.Context) (byzantine.Inbound, error) {
	var ev byzantine.Inbound
	if d := time.Until(e.from); time.Now().Before(e.until) {
		timer := time.NewTimer(max(d, 0))
		defer timer.Stop()
		select {
		case ev = <-e.net.inbox[e.id]:
			ev.At = time.Now()
			return ev, nil
		case <-ctx.Done():
			return ev, ctx.Err()
		case <-timer.C:
			time.Sleep(time.Until(e.until))
		}
	}
	if err := ctx.Err(); err != nil && e.deadlineFirst {
		return ev, err
	}
	select {
	case ev = <-e.net.inbox[e.id]:
		ev.At = time.Now()
		return ev, nil
	case <-ctx.Done():
		return ev, ctx.Err()
	}
}

// TestRunGeneralPausedAcrossDeadlineReports: SM(1), n=4, a traitorous
// commander gives attack to generals 1 and 2 and, just before round 0's
// deadline, retreat to general 3, whose relay of it reaches general 1 in
// round 1, in time. General 1 is stopped from the middle of round 1 until
// after its deadline, so the relay waits unread and is stamped late. It
// must decide as the others do or list round 1 in Overran, never decide
// otherwise in silence. Before the fix, with the deadline seen first, it
// decided attack with Overran empty while 2 and 3 decided retreat; with
// the waiting event seen first it took the relay, stamped after the
// deadline, into the round.
func TestRunGeneralPausedAcrossDeadlineReports(t *testing.T) {
	for _, deadlineFirst := range []bool{true, false} {
		name := map[bool]string{true: "deadline seen first", false: "event seen first"}[deadlineFirst]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				results := runTimedCommander(t, func(id byzantine.ID, base slowEndpoint, start time.Time, T time.Duration) byzantine.Endpoint {
					if id != 1 {
						return nil
					}
					return pausedGeneral{base, pausedEndpoint{base.chanEndpoint, start.Add(T / 2), start.Add(2*T + T/5), deadlineFirst}}
				})
				if results[2].Decision != results[3].Decision {
					t.Fatalf("the set-up failed: generals 2 and 3 decided %s and %s", results[2].Decision, results[3].Decision)
				}
				if results[1].Decision != results[2].Decision && !slices.Contains(results[1].Overran, 1) {
					t.Errorf("general 1, stopped across round 1's deadline, decided %s with Overran %v; generals 2 and 3 decided %s: IC1 violated in silence",
						results[1].Decision, results[1].Overran, results[2].Decision)
				}
				if !slices.Contains(results[1].Overran, 1) {
					t.Errorf("general 1 was stopped across round 1's deadline, Overran = %v, want round 1 listed", results[1].Overran)
				}
				for _, r := range results[2:] {
					if len(r.Overran) != 0 {
						t.Errorf("general %d kept the schedule, Overran = %v", r.ID, r.Overran)
					}
				}
			})
		})
	}
}

// pausedGeneral sends as a punctual general and receives as a paused one.
type pausedGeneral struct {
	slowEndpoint
	paused pausedEndpoint
}

func (p pausedGeneral) Recv(ctx context.Context) (byzantine.Inbound, error) {
	return p.paused.Recv(ctx)
}

// Paused reports the simulated stop.
func (p pausedGeneral) Paused(from, to time.Time) bool {
	return p.paused.from.Before(from) && !p.paused.until.Before(to)
}

var _ byzantine.PauseReporter = pausedGeneral{}

// brokenLinkEndpoint is a punctual general whose connection to one peer
// fails: every Send to it returns an error, while the peer, alive, still
// hears its markers and sends to it (a reset of one TCP connection).
type brokenLinkEndpoint struct {
	slowEndpoint
	to byzantine.ID
}

func (e brokenLinkEndpoint) Send(ctx context.Context, m byzantine.Message) error {
	if m.To == e.to {
		return errors.New("connection reset by peer")
	}
	return e.slowEndpoint.Send(ctx, m)
}

// TestRunGeneralLostSendToLivePeerReports: the set-up of
// TestRunGeneralPausedAcrossDeadlineReports, but general 3's relay to
// general 1 is lost (its connection to 1 stays broken) while 1 stays
// alive and punctual. General 1 then misses retreat and decides attack
// while 2 and 3 decide retreat. General 3 kept its schedule; the peer it
// could not reach is a fault (unreachable): with the traitorous commander
// that is two faults, more than m, and the run must say so. (Before the
// send error was dropped and every general reported keeping the
// schedule; then general 3 said it ran out of time, which blamed its own
// schedule for a link.)
func TestRunGeneralLostSendToLivePeerReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		results := runTimedCommander(t, func(id byzantine.ID, base slowEndpoint, _ time.Time, _ time.Duration) byzantine.Endpoint {
			if id != 3 {
				return nil
			}
			return brokenLinkEndpoint{base, 1}
		})
		checkUnreachable(t, results)
	})
}

// checkUnreachable checks that general 3 of runTimedCommander, whose
// round-1 relay to general 1 was lost, names 1 unreachable from round 1
// and kept its schedule, and that the run, with the traitorous commander,
// says it had too many faults.
func checkUnreachable(t *testing.T, results []byzantine.GeneralResult) {
	t.Helper()
	cfg := config(byzantine.SM, 4, 1, byzantine.Traitor{ID: 0, Strategy: byzantine.Custom})
	res := byzantine.Assemble(cfg, results)
	want := byzantine.PeerFault{ID: 1, Kind: byzantine.PeerUnreachable, Round: 1}
	if !slices.Contains(results[3].Faults, want) || len(results[3].Overran) != 0 {
		t.Errorf("general 3's round-1 relay to general 1 was lost: faults %v, overran %v; want %v among the faults and no round overran", results[3].Faults, results[3].Overran, want)
	}
	if results[1].Decision != results[2].Decision && !res.TooManyFaults() {
		t.Errorf("loyal generals decided %s (1) and %s (2) and the run does not say it had too many faults (faulty %v)",
			results[1].Decision, results[2].Decision, res.FaultyGenerals())
	}
}

// queuedLossEndpoint is a punctual general whose transport queues sends:
// its Send to one peer returns nil, and the message is then dropped when
// the connection resets, which the transport reports through Lost.
type queuedLossEndpoint struct {
	slowEndpoint
	to      byzantine.ID
	dropped *atomic.Bool
}

func (e queuedLossEndpoint) Send(ctx context.Context, m byzantine.Message) error {
	if m.To == e.to {
		e.dropped.Store(true)
		return nil // accepted, then lost with the link
	}
	return e.slowEndpoint.Send(ctx, m)
}

func (e queuedLossEndpoint) Lost(p byzantine.ID) bool { return p == e.to && e.dropped.Load() }

// TestRunGeneralQueuedLossToLivePeerReports: the set-up of
// TestRunGeneralLostSendToLivePeerReports, but general 3's Send of its
// relay to 1 returned nil (the transport queued it) and the transport then
// dropped it with the reset link. The loss must count as a failed send,
// and so 1 as unreachable: before, general 3 decided retreat with no
// fault and Overran = [] and every general reported keeping the
// schedule, while 1 decided attack.
func TestRunGeneralQueuedLossToLivePeerReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		results := runTimedCommander(t, func(id byzantine.ID, base slowEndpoint, _ time.Time, _ time.Duration) byzantine.Endpoint {
			if id != 3 {
				return nil
			}
			return queuedLossEndpoint{base, 1, new(atomic.Bool)}
		})
		checkUnreachable(t, results)
	})
}

// runTimedCommander runs SM(1), n=4, over chanNet with the traitorous
// commander of lateCommanderEndpoint (attack to 1 and 2 at once, retreat to
// 3 just before round 0's deadline) and with the endpoint of general 1 or 3
// replaced by what endpoint returns (nil: a punctual general), and returns
// every general's result.
func runTimedCommander(t *testing.T, endpoint func(id byzantine.ID, base slowEndpoint, start time.Time, T time.Duration) byzantine.Endpoint) []byzantine.GeneralResult {
	t.Helper()
	cfg := config(byzantine.SM, 4, 1, byzantine.Traitor{ID: 0, Strategy: byzantine.Custom,
		Func: func(_ int, honest []byzantine.Message, s byzantine.Signer) []byzantine.Message {
			for i, m := range honest {
				if m.To == 3 {
					m.Order, m.Sigs = byzantine.Retreat, nil
					honest[i], _ = s.Sign(m)
				}
			}
			return honest
		}})
	T := cfg.RoundTimeout
	net := newChanNet(cfg.Generals)
	priv, pub := byzantine.DeriveKeys(cfg.Seed, cfg.Generals)
	start := time.Now()
	var late, wg sync.WaitGroup
	var mu sync.Mutex
	var held []byzantine.Message
	results := make([]byzantine.GeneralResult, cfg.Generals)
	for i := range cfg.Generals {
		id := byzantine.ID(i)
		g, err := byzantine.NewGeneral(cfg, id, byzantine.Keyring{Private: priv[i], Public: pub})
		if err != nil {
			t.Fatal(err)
		}
		base := slowEndpoint{chanEndpoint{net, id}, 0, new(bool)}
		var ep byzantine.Endpoint = base
		if id == 0 {
			ep = lateCommanderEndpoint{base, start.Add(T - T/5), &late, &mu, &held}
		} else if e := endpoint(id, base, start, T); e != nil {
			ep = e
		}
		wg.Go(func() { results[i], _ = byzantine.RunGeneral(t.Context(), g, ep, start, nil) })
	}
	wg.Wait()
	late.Wait()
	for _, r := range results[1:] {
		t.Logf("general %d decides %s, values %v, overran %v", r.ID, r.Decision, r.Values, r.Overran)
	}
	return results
}
