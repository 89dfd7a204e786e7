package redlock_test

// Regression tests of defects of the lock core found by a review (the
// rueidis adapter's two are tested there, by TestLargeQueueKeepsOneConnection
// and TestNoScriptKeepsOrder). Each fails on the core before its rewrite
// (commit ccf05d4) and passes after it; the real-node version of each runs
// against redis-server, and where the behaviour does not need a real node a
// second variant runs over redlocktest.NewMemNodes under testing/synctest.
//
// Two rows showed defects that the first rewrite of the core still had and
// that are fixed since: TestCancelledAcquisitionIsNotNoQuorum's TryLock row
// (a final attempt waited for every node although its context was
// cancelled, then reported ErrNoQuorum) and TestTriesWaitTheRetryDelay's
// split-vote row (a lone waiter whose attempt set keys on a minority woke
// itself and retried without the delay).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// defectKey is the key of resource on the nodes (the default prefix).
func defectKey(resource string) string { return redlock.DefaultKeyPrefix + resource }

// attempts is an Observer that records the end of every acquisition
// attempt.
type attempts struct {
	mu    sync.Mutex
	times []time.Time
	outs  []redlock.AttemptOutcome
}

func (a *attempts) Attempt(e redlock.AttemptEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.times = append(a.times, time.Now())
	a.outs = append(a.outs, e.Outcome)
}
func (a *attempts) Extension(redlock.ExtensionEvent) {}
func (a *attempts) End(redlock.EndEvent)             {}

func (a *attempts) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.times)
}

func (a *attempts) gaps() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(a.times); i++ {
		out = append(out, a.times[i].Sub(a.times[i-1]).Round(time.Millisecond))
	}
	return out
}

// holders counts the nodes of cl whose key holds value, reading each node
// for at most wait (a frozen node counts as not holding it).
func holders(cl *redlocktest.Cluster, key, value string, wait time.Duration) int {
	var n atomic.Int64
	var wg sync.WaitGroup
	for _, s := range cl.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if v, err := s.Client().Get(ctx, key).Result(); err == nil && v == value {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load())
}

// keyNodes counts the nodes of cl on which key exists.
func keyNodes(t *testing.T, cl *redlocktest.Cluster, key string) int {
	t.Helper()
	n := 0
	for _, s := range cl.Servers {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := s.Client().Exists(ctx, key).Result()
		cancel()
		if err != nil {
			t.Fatalf("EXISTS on %s: %v", s.Addr(), err)
		}
		n += int(c)
	}
	return n
}

// TestHandoffLimitHoldsAlongTheChain is a regression test: the
// hand-off limit (WithHandoffLimit) must hold when one waiter at a time is
// queued. Two goroutines of one client take turns on a key (each holds it
// 20 ms, then takes 2 ms before asking again), so that the queue empties
// between hand-overs; another client trying meanwhile must get in within a
// bounded time. Before the fix the count was forgotten whenever the queue
// emptied, and the other client never got in.
func TestHandoffLimitHoldsAlongTheChain(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	busy := dialURLs(t, nodeAdapter{"rueidis", rueidis.Dial}, cl.URLs(), redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithHandoffLimit(4))
	other := dialURLs(t, nodeAdapter{"rueidis", rueidis.Dial}, cl.URLs(), redlock.WithNodeTimeout(500*time.Millisecond))
	const resource = "defect1"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var grants atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := busy.Lock(ctx, resource, redlock.WithTTL(5*time.Second))
				if err != nil {
					return
				}
				grants.Add(1)
				hold := time.NewTimer(20 * time.Millisecond) // the holder's work
				select {
				case <-hold.C:
				case <-stop:
					hold.Stop()
				}
				_ = l.Unlock(ctx)
				pause := time.NewTimer(2 * time.Millisecond)
				select {
				case <-pause.C:
				case <-stop:
					pause.Stop()
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	redlocktest.Eventually(t, 10*time.Second, func() bool { return grants.Load() >= 2 }, "the busy client's goroutines took no turns")
	start := time.Now()
	octx, ocancel := context.WithTimeout(ctx, 15*time.Second) // bounded; before the fix: never
	defer ocancel()
	l, err := other.Lock(octx, resource, redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatalf("the other client did not get in within %v while the busy client made %d grants with a hand-off limit of 4: %v", time.Since(start).Round(time.Millisecond), grants.Load(), err)
	}
	t.Logf("the other client got in after %v (busy grants: %d)", time.Since(start).Round(time.Millisecond), grants.Load())
	_ = l.Unlock(ctx)
}

// TestLostLockIsNotHandedOver is a regression test: a lock whose
// auto-extension found it lost (its keys were deleted on a majority, which
// another client then took) is never handed over to a waiter of the same
// client, its Unlock returns ErrNotHeld, and its Validity is 0 once Err
// reports the loss. Before the fix the waiter was granted a lock that held
// only a minority of the nodes, Unlock returned nil and Validity stayed
// positive.
func TestLostLockIsNotHandedOver(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	obs := &attempts{}
	c := dialURLs(t, nodeAdapter{"rueidis", rueidis.Dial}, cl.URLs(), redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithObserver(obs))
	const resource = "defect2"
	key := defectKey(resource)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := c.Lock(ctx, resource, redlock.WithTTL(5*time.Second), redlock.WithAutoExtend(), redlock.WithExtendInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// A waiter of the same client, queued behind l (no bound on its tries,
	// so that a hand-over is allowed).
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	type result struct {
		l   *redlock.Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		wl, err := c.Lock(wctx, resource, redlock.WithTTL(5*time.Second))
		got <- result{wl, err}
	}()
	redlocktest.Eventually(t, 10*time.Second, func() bool { return obs.count() >= 3 }, "the waiter made no second attempt")
	// Another client's value replaces l's keys on a majority.
	for _, s := range cl.Servers[:3] {
		if err := s.Client().Set(ctx, key, "another-client", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the auto-extension did not notice the loss in 10s")
	}
	if !errors.Is(l.Err(), redlock.ErrLost) {
		t.Fatalf("Err() = %v, want ErrLost", l.Err())
	}
	var failed []string
	if v := l.Validity(); v != 0 {
		failed = append(failed, fmt.Sprintf("Validity() = %v after Err() = %v, want 0", v, l.Err()))
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		failed = append(failed, fmt.Sprintf("Unlock of a lost lock = %v, want ErrNotHeld", err))
	}
	// The waiter must not be granted anything: another client holds a
	// majority for 10 s.
	timer := time.NewTimer(500 * time.Millisecond)
	defer timer.Stop()
	select {
	case r := <-got:
		if r.err == nil {
			n := holders(cl, key, r.l.Value(), time.Second)
			failed = append(failed, fmt.Sprintf("the waiter was granted a lock (validity %v) that %d of 5 nodes hold, while another client holds 3", r.l.Validity(), n))
			_ = r.l.Unlock(ctx)
		} else {
			failed = append(failed, fmt.Sprintf("the waiter's Lock ended early: %v", r.err))
		}
	case <-timer.C:
		wcancel()
		if r := <-got; r.err == nil {
			failed = append(failed, "the waiter was granted a lock while another client holds a majority")
			_ = r.l.Unlock(ctx)
		}
	}
	for _, f := range failed {
		t.Error(f)
	}
}

// TestCloseEndsAWaitingLock is a regression test: a Lock call waiting
// to retry behind a held lock, with a context that does not end, returns
// promptly when the client is closed, with an error satisfying
// errors.Is(err, ErrClosed). Before the fix it went on retrying until its
// context ended.
func TestCloseEndsAWaitingLock(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl, holder := cluster(t, a, 5)
		const resource = "defect3"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		held, err := holder.TryLock(ctx, resource, redlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = held.Unlock(ctx) }()
		obs := &attempts{}
		c, err := a.dial(cl.URLs(), redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		// A context that never ends while the test checks (as
		// context.Background), cancelled only to clean up after a failure.
		lctx, lcancel := context.WithCancel(context.Background())
		defer lcancel()
		done := make(chan error, 1)
		go func() {
			l, err := c.Lock(lctx, resource)
			if err == nil {
				_ = l.Unlock(context.Background())
			}
			done <- err
		}()
		redlocktest.Eventually(t, 10*time.Second, func() bool { return obs.count() >= 2 }, "the Lock call made no second attempt")
		closed := time.Now()
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, redlock.ErrClosed) {
				t.Errorf("Lock after Close = %v, want an error satisfying ErrClosed", err)
			}
			if d := time.Since(closed); d > 5*time.Second { // before the fix: never
				t.Errorf("Lock returned %v after Close, want promptly", d)
			}
		case <-time.After(10 * time.Second):
			lcancel()
			err := <-done
			t.Errorf("Lock still waiting 10s after Close (%d attempts); once its context was cancelled it returned %v", obs.count(), err)
		}
	})
}

// TestDoReleasesWhenFnPanics is a regression test: Client.Do releases
// the lock when fn panics, and the panic goes on. Before the fix the lock
// stayed held (and auto-extended) when the panic was recovered higher up.
func TestDoReleasesWhenFnPanics(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl, c := cluster(t, a, 5)
		other := dial(t, a, cl)
		const resource = "defect4"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			_ = c.Do(ctx, resource, func(context.Context) error { panic("boom") }, redlock.WithTTL(5*time.Second))
		}()
		if recovered != "boom" {
			t.Errorf("recovered %v, want the panic of fn", recovered)
		}
		key := defectKey(resource)
		if n := keyNodes(t, cl, key); n >= 3 {
			redlocktest.Eventually(t, 10*time.Second, func() bool { return keyNodes(t, cl, key) < 3 }, "the key stays on %d of 5 nodes after fn panicked", n)
		}
		l, err := other.TryLock(ctx, resource)
		if err != nil {
			t.Fatalf("another client's TryLock after Do's fn panicked: %v", err)
		}
		_ = l.Unlock(ctx)
	})
}

// TestCancelledAcquisitionIsNotNoQuorum is a regression test: an
// acquisition cancelled while nodes had not answered yet is not reported as
// ErrNoQuorum: the nodes not answered are NoReply, not failed. Before the fix
// they counted as failed with the context's error.
func TestCancelledAcquisitionIsNotNoQuorum(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 5)
		c := dialURLs(t, a, cl.URLs(), redlock.WithNodeTimeout(3*time.Second))
		// Connect to every node before freezing some.
		ctx0, cancel0 := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel0()
		l, err := c.TryLock(ctx0, "defect5-warm")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx0); err != nil {
			t.Fatal(err)
		}
		for _, s := range cl.Servers[2:] {
			s.Freeze()
		}
		defer func() {
			for _, s := range cl.Servers[2:] {
				s.Thaw()
			}
		}()
		for _, tc := range []struct {
			name string
			try  func(ctx context.Context) (*redlock.Lock, error)
		}{
			{"Lock", func(ctx context.Context) (*redlock.Lock, error) { return c.Lock(ctx, "defect5") }},
			{"TryLock", func(ctx context.Context) (*redlock.Lock, error) { return c.TryLock(ctx, "defect5") }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				stop := time.AfterFunc(200*time.Millisecond, cancel) // while the frozen nodes have not answered
				defer stop.Stop()
				start := time.Now()
				l, err := tc.try(ctx)
				t.Logf("returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
				if err == nil {
					t.Fatalf("acquired %q with 3 of 5 nodes frozen", l.Resource())
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want it to satisfy context.Canceled", err)
				}
				if errors.Is(err, redlock.ErrNoQuorum) {
					t.Errorf("a cancelled acquisition satisfies ErrNoQuorum: %v", err)
				}
			})
		}
	})
}

// TestSubscriptionsFollowTheQueue is a regression test: the hand-off's
// subscribe and unsubscribe of a key run in order per node, so that while a
// waiter is queued the nodes it listens on (redlock.HandoffWatchNodes of
// them) are subscribed to the key's releases, however
// quickly waiters came and went before. On many resources at once, short
// Lock calls join and leave the queue (a join of an empty queue subscribes,
// a leave that empties it unsubscribes), then a last Lock call on each stays:
// HandoffWatchNodes nodes must count the client's subscription to every
// resource's channel (PUBSUB NUMSUB), within the subscribe timeout.
func TestSubscriptionsFollowTheQueue(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	holder := dialURLs(t, nodeAdapter{"rueidis", rueidis.Dial}, cl.URLs(), redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithHandoff(false))
	c := dialURLs(t, nodeAdapter{"rueidis", rueidis.Dial}, cl.URLs(), redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
	const resources, churners, cycles, rounds = 12, 2, 10, 4
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Second)
	defer cancel()
	var channels []string
	for r := range resources {
		resource := fmt.Sprintf("defect6-%d", r)
		channels = append(channels, rueidis.ChannelPrefix+defectKey(resource))
		held, err := holder.TryLock(ctx, resource, redlock.WithTTL(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = held.Unlock(ctx) }()
	}
	// subscribed returns, per channel, how many nodes count exactly one
	// subscriber to it, and whether some node counts more.
	subscribed := func() ([]int, bool) {
		out := make([]int, len(channels))
		more := false
		for _, s := range cl.Servers {
			m, err := s.Client().PubSubNumSub(ctx, channels...).Result()
			if err != nil {
				t.Fatalf("PUBSUB NUMSUB on %s: %v", s.Addr(), err)
			}
			for j, ch := range channels {
				switch m[ch] {
				case 0:
				case 1:
					out[j]++
				default:
					more = true
				}
			}
		}
		return out, more
	}
	// all reports whether each channel is listened to on want nodes, once
	// each.
	all := func(want int) bool {
		got, more := subscribed()
		return !more && !slices.ContainsFunc(got, func(n int) bool { return n != want })
	}
	for round := range rounds {
		stay, unstay := context.WithCancel(ctx)
		var churned, stayed sync.WaitGroup
		for r := range resources {
			resource := fmt.Sprintf("defect6-%d", r)
			for g := range churners {
				churned.Add(1)
				stayed.Add(1)
				go func() {
					defer stayed.Done()
					for i := range cycles {
						cctx, ccancel := context.WithTimeout(ctx, time.Duration(500+((r+g+i)%7)*400)*time.Microsecond)
						if l, err := c.Lock(cctx, resource); err == nil {
							_ = l.Unlock(ctx)
						}
						ccancel()
					}
					churned.Done()
					// The last call of each churner stays queued.
					if l, err := c.Lock(stay, resource); err == nil {
						_ = l.Unlock(ctx)
					}
				}()
			}
		}
		churned.Wait()
		// Each node runs its queue of SUBSCRIBE and UNSUBSCRIBE calls in
		// order, one round trip each, and the churn queued many: the
		// subscriptions settle after the last of them, which a loaded
		// machine delays well past one subscribe timeout (at load 42 under
		// -race a 2 s bound failed, and the counts read just after it were
		// right: "2s later the nodes that count one subscription to each
		// are [2 2 2 2 2 2 2 2 2 2 2 2], want 2 each"). What the test
		// rules out is a subscription that never follows the queue.
		ok := true
		deadline := time.Now().Add(20 * time.Second)
		for !all(redlock.HandoffWatchNodes) {
			if time.Now().After(deadline) {
				ok = false
				break
			}
			time.Sleep(5 * time.Millisecond) // polling, bounded by the deadline
		}
		got, _ := subscribed()
		unstay()
		stayed.Wait()
		if !ok {
			t.Fatalf("round %d: waiters are queued on each of %d resources, but 20s later the nodes that count one subscription to each are %v, want %d each", round, len(channels), got, redlock.HandoffWatchNodes)
		}
		redlocktest.Eventually(t, 20*time.Second, func() bool { return all(0) }, "round %d: subscriptions left after every waiter left", round)
	}
}

// TestUnlockPastDeadlineReleases is a regression test: Unlock with a
// context whose deadline has passed (defer lock.Unlock(reqCtx)) still sends
// the releases. Before the fix it sent none, and the keys stayed for a
// whole ttl.
func TestUnlockPastDeadlineReleases(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl, c := cluster(t, a, 5)
		other := dial(t, a, cl)
		for _, tc := range []struct {
			name string
			ctx  func() (context.Context, context.CancelFunc)
		}{
			{"deadline passed", func() (context.Context, context.CancelFunc) {
				return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			}},
			{"cancelled", func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resource := "defect7-" + tc.name
				key := defectKey(resource)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				l, err := c.TryLock(ctx, resource, redlock.WithTTL(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				uctx, ucancel := tc.ctx()
				defer ucancel()
				err = l.Unlock(uctx)
				redlocktest.Eventually(t, 10*time.Second, func() bool { return keyNodes(t, cl, key) == 0 }, "keys left on %d of 5 nodes after Unlock (which returned %v)", keyNodes(t, cl, key), err)
				l2, err := other.TryLock(ctx, resource)
				if err != nil {
					t.Fatalf("another client's TryLock after the Unlock: %v", err)
				}
				_ = l2.Unlock(ctx)
			})
		}
	})
}

// TestTriesWaitTheRetryDelay is a regression test: with the hand-off
// on, WithTries(n) waits a retry delay between each two attempts (as
// WithRetryDelay documents), the first retry included. Before the fix the
// first retry came at once: n attempts waited only n-2 delays. The key is
// held by another client's value, set on the nodes directly: on every node,
// and on a bare majority (each attempt then sets the key on the other two
// nodes, a split vote, and gives them back).
func TestTriesWaitTheRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		held int // nodes holding the other client's value
	}{
		{"held on every node", 5},
		{"split vote", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := redlocktest.Start(t, 5)
			obs := &attempts{}
			const delay = 300 * time.Millisecond
			c := dialURLs(t, nodeAdapter{"rueidis", rueidis.Dial}, cl.URLs(), redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithObserver(obs))
			const resource = "defect10"
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			for _, s := range cl.Servers[:tc.held] {
				if err := s.Client().Set(ctx, defectKey(resource), "another-client", 20*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			_, err := c.Lock(ctx, resource, redlock.WithTries(3), redlock.WithRetryDelay(delay, delay))
			elapsed := time.Since(start)
			if !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("Lock = %v, want ErrNotAcquired", err)
			}
			if n := obs.count(); n != 3 {
				t.Errorf("%d attempts, want 3", n)
			}
			if elapsed < 2*delay {
				t.Errorf("3 tries took %v, want at least 2 retry delays (%v); gaps between attempts: %v", elapsed.Round(time.Millisecond), 2*delay, obs.gaps())
			}
			for i, g := range obs.gaps() {
				if g < delay-time.Millisecond {
					t.Errorf("retry %d came %v after the attempt before it, want at least the retry delay %v", i+1, g, delay)
				}
			}
		})
	}
}

// TestHandedLockIsOnAQuorum is a regression test: a lock handed over
// within one client is an acquisition made on the waiter's behalf, so the
// waiter's Lock returns only once a quorum of nodes holds Lock.Value(). Here
// three of five nodes are frozen when the holder unlocks: the waiter may
// get the lock only after they are thawed. Before the fix the waiter got the
// lock at once, before any quorum held its value. The holder reads its
// value, so that the hand-over cannot keep it (a lock whose value nobody
// read is kept at no round trip: TestHandoffKeepsAnUnreadLock).
func TestHandedLockIsOnAQuorum(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	obs := &attempts{}
	c := dialURLs(t, nodeAdapter{"rueidis", rueidis.Dial}, cl.URLs(), redlock.WithNodeTimeout(300*time.Millisecond), redlock.WithObserver(obs))
	const resource = "defect11"
	key := defectKey(resource)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := c.Lock(ctx, resource, redlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Value() // read: never passed on
	type result struct {
		value string
		on    int // nodes holding value when Lock returned
		err   error
	}
	got := make(chan result, 1)
	go func() {
		wl, err := c.Lock(ctx, resource, redlock.WithTTL(5*time.Second))
		if err != nil {
			got <- result{err: err}
			return
		}
		got <- result{value: wl.Value(), on: holders(cl, key, wl.Value(), 100*time.Millisecond)}
		_ = wl.Unlock(ctx)
	}()
	redlocktest.Eventually(t, 10*time.Second, func() bool { return obs.count() >= 3 }, "the waiter made no second attempt")
	frozen := cl.Servers[2:]
	for _, s := range frozen {
		s.Freeze()
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			for _, s := range frozen {
				s.Thaw()
			}
		}
	}
	defer thaw()
	uerr := make(chan error, 1)
	go func() { uerr <- l.Unlock(ctx) }()
	var r result
	select {
	case r = <-got: // granted while three nodes are frozen
	case <-time.After(time.Second):
		// Not granted while the nodes are frozen (as it should be).
	}
	thaw()
	if r.value == "" && r.err == nil {
		select {
		case r = <-got:
		case <-ctx.Done():
			t.Fatal("the waiter got no lock once the nodes were thawed")
		}
	}
	<-uerr
	if r.err != nil {
		t.Fatalf("the waiter's Lock: %v", r.err)
	}
	if r.on < 3 {
		t.Errorf("the waiter's Lock returned when %d of 5 nodes held its value, want a quorum (3)", r.on)
	}
}

// TestNilLock is a regression test: Unlock and Extend on a nil
// *Lock return ErrNotHeld, so that a deferred Unlock after a failed
// acquisition is safe. Before the fix they panicked.
func TestNilLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(*redlock.Lock, context.Context) error
	}{
		{"Unlock", (*redlock.Lock).Unlock},
		{"Extend", (*redlock.Lock).Extend},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s on a nil *Lock panicked: %v", tc.name, p)
					}
				}()
				err = tc.call(nil, context.Background())
			}()
			if !errors.Is(err, redlock.ErrNotHeld) {
				t.Errorf("%s on a nil *Lock = %v, want ErrNotHeld", tc.name, err)
			}
		})
	}
}

// --- in-memory variants (new code only) ---
//
// The same checks over redlocktest.NewMemNodes inside a testing/synctest
// bubble: fake time, so they take milliseconds and do not depend on the
// machine's load. Item 6 has none: a MemNode's watches are not visible
// through the public API, and item 12 needs no node.

// memClient returns a client over nodes, closed when the bubble ends.
func memClient(t *testing.T, nodes []redlock.Node, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// slowMemNodes returns n MemNodes whose answers each arrive after d
// (MemNode.SetSlow), as nodes for a client and as MemNodes.
func slowMemNodes(n int, d time.Duration) ([]redlock.Node, []*redlocktest.MemNode) {
	nodes, mems := redlocktest.NewMemNodes(n)
	for _, m := range mems {
		m.SetSlow(d)
	}
	return nodes, mems
}

// memHolders counts the MemNodes on which key holds value.
func memHolders(mems []*redlocktest.MemNode, key, value string) int {
	n := 0
	for _, m := range mems {
		if v, ok, err := m.Value(context.Background(), key); err == nil && ok && v == value {
			n++
		}
	}
	return n
}

// memKeyNodes counts the MemNodes on which key exists.
func memKeyNodes(mems []*redlocktest.MemNode, key string) int {
	n := 0
	for _, m := range mems {
		if _, ok, err := m.Value(context.Background(), key); err == nil && ok {
			n++
		}
	}
	return n
}

// memOccupy sets key to another client's value on mems.
func memOccupy(t *testing.T, mems []*redlocktest.MemNode, key string, ttl time.Duration) {
	t.Helper()
	for _, m := range mems {
		if ok, err := m.Acquire(context.Background(), key, "another-client", ttl); err != nil || !ok {
			t.Fatalf("occupy %s on %s: %v %v", key, m, ok, err)
		}
	}
}

// The same, over MemNodes.
func TestHandoffLimitHoldsAlongTheChainMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		for _, m := range mems {
			m.SetSlow(200 * time.Microsecond)
		}
		busy := memClient(t, nodes, redlock.WithHandoffLimit(4))
		other := memClient(t, nodes)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var wg sync.WaitGroup
		var grants atomic.Int64
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					l, err := busy.Lock(ctx, "r", redlock.WithTTL(5*time.Second))
					if err != nil {
						return
					}
					grants.Add(1)
					time.Sleep(20 * time.Millisecond) // fake time: the holder's work
					_ = l.Unlock(context.Background())
					time.Sleep(2 * time.Millisecond)
				}
			}()
		}
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		octx, ocancel := context.WithTimeout(ctx, 4*time.Second)
		defer ocancel()
		l, err := other.Lock(octx, "r", redlock.WithTTL(5*time.Second))
		if err != nil {
			t.Errorf("the other client did not get in within %v of fake time (%d busy grants, hand-off limit 4): %v", time.Since(start), grants.Load(), err)
		} else {
			_ = l.Unlock(context.Background())
		}
		cancel()
		wg.Wait()
	})
}

// The same, over MemNodes.
func TestLostLockIsNotHandedOverMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		for _, m := range mems {
			m.SetSlow(time.Millisecond)
		}
		c := memClient(t, nodes)
		key := defectKey("r")
		l, err := c.Lock(t.Context(), "r", redlock.WithTTL(5*time.Second), redlock.WithAutoExtend(), redlock.WithExtendInterval(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			l   *redlock.Lock
			err error
		}
		got := make(chan result, 1)
		wctx, wcancel := context.WithTimeout(t.Context(), time.Second)
		defer wcancel()
		go func() {
			wl, err := c.Lock(wctx, "r", redlock.WithTTL(5*time.Second))
			got <- result{wl, err}
		}()
		synctest.Wait() // the waiter is queued
		for _, m := range mems[:3] {
			if _, err := m.Release(context.Background(), key, l.Value()); err != nil {
				t.Fatal(err)
			}
		}
		memOccupy(t, mems[:3], key, 20*time.Second)
		<-l.Done()
		if !errors.Is(l.Err(), redlock.ErrLost) {
			t.Fatalf("Err() = %v, want ErrLost", l.Err())
		}
		if v := l.Validity(); v != 0 {
			t.Errorf("Validity() = %v after Err() = %v, want 0", v, l.Err())
		}
		if err := l.Unlock(context.Background()); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Unlock of a lost lock = %v, want ErrNotHeld", err)
		}
		if r := <-got; r.err == nil {
			t.Errorf("the waiter was granted a lock that %d of 5 nodes hold, while another client holds 3", memHolders(mems, key, r.l.Value()))
			_ = r.l.Unlock(context.Background())
		}
	})
}

// The same, over MemNodes.
func TestCloseEndsAWaitingLockMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		holder := memClient(t, nodes)
		if _, err := holder.TryLock(t.Context(), "r", redlock.WithTTL(time.Minute)); err != nil {
			t.Fatal(err)
		}
		c, err := redlock.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		lctx, lcancel := context.WithCancel(context.Background())
		defer lcancel()
		done := make(chan error, 1)
		go func() {
			_, err := c.Lock(lctx, "r")
			done <- err
		}()
		time.Sleep(time.Second) // fake time: a few retries
		closed := time.Now()
		_ = c.Close()
		select {
		case err := <-done:
			if !errors.Is(err, redlock.ErrClosed) {
				t.Errorf("Lock after Close = %v, want ErrClosed", err)
			}
			if d := time.Since(closed); d > 100*time.Millisecond {
				t.Errorf("Lock returned %v after Close", d)
			}
		case <-time.After(10 * time.Second):
			lcancel()
			t.Errorf("Lock still waiting 10s (fake) after Close; then %v", <-done)
		}
	})
}

// The same, over MemNodes.
func TestDoReleasesWhenFnPanicsMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes)
		other := memClient(t, nodes)
		var recovered any
		func() {
			defer func() { recovered = recover() }()
			_ = c.Do(t.Context(), "r", func(context.Context) error { panic("boom") })
		}()
		if recovered != "boom" {
			t.Errorf("recovered %v, want the panic of fn", recovered)
		}
		synctest.Wait()
		if n := memKeyNodes(mems, defectKey("r")); n != 0 {
			t.Errorf("the key stays on %d of 5 nodes after fn panicked", n)
		}
		if _, err := other.TryLock(t.Context(), "r"); err != nil {
			t.Errorf("another client's TryLock after Do's fn panicked: %v", err)
		}
	})
}

// The same, over MemNodes.
func TestCancelledAcquisitionIsNotNoQuorumMem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tries int
	}{
		{"Lock", 0},
		{"TryLock", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				c := memClient(t, nodes, redlock.WithNodeTimeout(3*time.Second))
				for _, m := range mems[2:] {
					m.Freeze()
				}
				defer func() {
					for _, m := range mems[2:] {
						m.Thaw()
					}
				}()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				time.AfterFunc(200*time.Millisecond, cancel)
				start := time.Now()
				var err error
				if tc.tries == 1 {
					_, err = c.TryLock(ctx, "r")
				} else {
					_, err = c.Lock(ctx, "r")
				}
				if err == nil {
					t.Fatal("acquired with 3 of 5 nodes frozen")
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
				if errors.Is(err, redlock.ErrNoQuorum) {
					t.Errorf("a cancelled acquisition satisfies ErrNoQuorum (after %v): %v", time.Since(start), err)
				}
			})
		})
	}
}

// The same, over MemNodes.
func TestUnlockPastDeadlineReleasesMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes)
		l, err := c.TryLock(t.Context(), "r", redlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		err = l.Unlock(ctx)
		synctest.Wait()
		if n := memKeyNodes(mems, defectKey("r")); n != 0 {
			t.Errorf("keys left on %d of 5 nodes after Unlock (which returned %v)", n, err)
		}
	})
}

// The same, over MemNodes.
func TestTriesWaitTheRetryDelayMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		memOccupy(t, mems, defectKey("r"), time.Minute)
		obs := &attempts{}
		c := memClient(t, nodes, redlock.WithObserver(obs))
		const delay = 300 * time.Millisecond
		start := time.Now()
		_, err := c.Lock(t.Context(), "r", redlock.WithTries(3), redlock.WithRetryDelay(delay, delay))
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("Lock = %v, want ErrNotAcquired", err)
		}
		if n := obs.count(); n != 3 {
			t.Errorf("%d attempts, want 3", n)
		}
		if d := time.Since(start); d < 2*delay {
			t.Errorf("3 tries took %v of fake time, want at least %v; gaps: %v", d, 2*delay, obs.gaps())
		}
	})
}

// The same, over MemNodes.
func TestHandedLockIsOnAQuorumMem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		for _, m := range mems {
			m.SetSlow(time.Millisecond)
		}
		c := memClient(t, nodes, redlock.WithNodeTimeout(300*time.Millisecond))
		key := defectKey("r")
		l, err := c.Lock(t.Context(), "r", redlock.WithTTL(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Value() // read: never passed on
		type result struct {
			on  int
			err error
		}
		got := make(chan result, 1)
		go func() {
			wl, err := c.Lock(t.Context(), "r", redlock.WithTTL(5*time.Second))
			if err != nil {
				got <- result{err: err}
				return
			}
			got <- result{on: memHolders(mems, key, wl.Value())}
			_ = wl.Unlock(context.Background())
		}()
		synctest.Wait() // the waiter is queued
		for _, m := range mems[2:] {
			m.Freeze()
		}
		_ = l.Unlock(context.Background())
		time.Sleep(time.Second) // fake time
		select {
		case r := <-got:
			t.Errorf("the waiter's Lock returned (%v) while 3 of 5 nodes are frozen, with its value on %d nodes", r.err, r.on)
		default:
		}
		for _, m := range mems[2:] {
			m.Thaw()
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("the waiter's Lock: %v", r.err)
		}
		if r.on < 3 {
			t.Errorf("the waiter's Lock returned when %d of 5 nodes held its value, want a quorum (3)", r.on)
		}
	})
}

// handleOfR locks "r" with a client of ttl over nodes (closed at the end
// of the test), takes the lock's handle, and (under synctest) lets the
// requests still on their way after the quorum land: a lock another
// process goes on with (dlm release HANDLE, dlm extend HANDLE).
func handleOfR(t *testing.T, nodes []redlock.Node, ttl time.Duration) (*redlock.Client, *redlock.Lock, redlock.Handle) {
	t.Helper()
	holder := memClient(t, nodes, redlock.WithTTL(ttl))
	l, err := holder.Lock(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	h := l.Handle()
	synctest.Wait()
	return holder, l, h
}
