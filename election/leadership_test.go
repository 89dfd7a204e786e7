package election_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Proclaim changes the published identity and keeps the term; after the
// leadership ended it is refused with ErrNotHeld.
func TestProclaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		e := newElection(t, newClient(t, nodes))
		a, err := e.Campaign(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Proclaim(t.Context(), "a at 10.0.0.7:8080"); err != nil {
			t.Fatal(err)
		}
		mustLeader(t, e, true, election.Leader{ID: "a at 10.0.0.7:8080", Term: a.Term()})
		if a.ID() != "a at 10.0.0.7:8080" {
			t.Errorf("ID() = %q after Proclaim", a.ID())
		}
		st, err := e.Status(t.Context())
		if err != nil || !st.Since.Equal(a.Since()) {
			t.Errorf("Status = %+v, %v; want since %v", st, err, a.Since())
		}
		if err := a.Proclaim(t.Context(), ""); !errors.Is(err, election.ErrInvalid) {
			t.Errorf("Proclaim of an empty id = %v, want ErrInvalid", err)
		}
		_ = a.Resign(t.Context())
		if err := a.Proclaim(t.Context(), "b"); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Proclaim after Resign = %v, want ErrNotHeld", err)
		}
	})
}

// A leadership handed over by handle goes on in another process (here
// another client) with the same term, identity and since, and keeps
// renewing there after the first process stopped; a handle of another
// election, or of a leadership that ended, is refused.
func TestResumeLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		first, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(time.Second/2))
		if err != nil {
			t.Fatal(err)
		}
		a, err := newElection(t, first).Campaign(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		h := a.Handle()
		_ = first.Close() // the first process stops, without resigning
		other := newClient(t, nodes)
		o, err := election.New(other, "other")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.Resume(t.Context(), h); !errors.Is(err, election.ErrInvalid) {
			t.Errorf("Resume in another election = %v, want ErrInvalid", err)
		}
		e := newElection(t, other)
		r, err := e.Resume(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID() != "a" || r.Term() != a.Term() || !r.Since().Equal(a.Since()) {
			t.Errorf("resumed %q term %d since %v, want a, %d, %v", r.ID(), r.Term(), r.Since(), a.Term(), a.Since())
		}
		time.Sleep(10 * ttl) // fake time: the resumed leadership renews
		select {
		case <-r.Done():
			t.Fatalf("resumed leadership ended: %v", r.Err())
		default:
		}
		mustLeader(t, e, true, election.Leader{ID: "a", Term: a.Term()})
		if err := r.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Resume(t.Context(), h); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Resume after Resign = %v, want ErrNotHeld", err)
		}
	})
}

// Run leads while its ctx lasts: the callbacks say so (started with a
// context that ends with the leadership, stopped with ErrUnlocked, every
// leader observed); cancelling ctx resigns, so that the next candidate is
// elected at once; Run returns once its callbacks have.
func TestRunCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		e := newElection(t, newClient(t, nodes), election.WithPollInterval(50*time.Millisecond))
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		var events []string
		note := func(s string) {
			mu.Lock()
			events = append(events, s)
			mu.Unlock()
		}
		started := make(chan *election.Leadership, 1)
		done := make(chan error, 1)
		go func() {
			done <- e.Run(ctx, "a", election.Callbacks{
				OnStartedLeading: func(lctx context.Context, l *election.Leadership) {
					note("started")
					started <- l
					<-lctx.Done()
					note("leading ctx done")
				},
				OnStoppedLeading: func(err error) {
					if !errors.Is(err, redlock.ErrUnlocked) {
						t.Errorf("OnStoppedLeading(%v), want ErrUnlocked", err)
					}
					note("stopped")
				},
				OnNewLeader: func(c election.Change) {
					if c.Leader.ID != "" {
						note("leader " + c.Leader.ID)
					}
				},
			})
		}()
		a := <-started
		time.Sleep(5 * ttl) // fake time: a leads, extends, is observed
		b := make(chan *election.Leadership, 1)
		go func() {
			l, err := newElection(t, newClient(t, nodes)).Campaign(t.Context(), "b")
			if err != nil {
				t.Error(err)
			}
			b <- l
		}()
		time.Sleep(ttl)
		cancel()
		resigned := time.Now()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
		lb := <-b
		if d := time.Since(resigned); d > redlock.DefaultRetryMax+time.Second {
			t.Errorf("b elected %v after a's Run ended, want at once (a resigned)", d)
		}
		if lb != nil && lb.Term() <= a.Term() {
			t.Errorf("term of b %d, want above %d", lb.Term(), a.Term())
		}
		mu.Lock()
		defer mu.Unlock()
		// The order of the observer's report and of the start is free, as
		// is that of the leading ctx's end and of the stop.
		n := len(events)
		if n < 4 || !slices.Contains(events, "started") || !slices.Contains(events, "leader a") ||
			!slices.Contains(events[n-2:], "leading ctx done") || !slices.Contains(events[n-2:], "stopped") {
			t.Errorf("events %q, want a started and observed, then its leading ctx ended and it stopped", events)
		}
		if lb != nil {
			_ = lb.Resign(t.Context())
		}
	})
}
