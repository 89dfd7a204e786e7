package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// keysEverywhere counts the lock keys under prefix on the running nodes.
func keysEverywhere(cl *redlocktest.Cluster, prefix string) int {
	n := 0
	for _, s := range cl.Servers {
		if s.Running() {
			n += len(s.MustKeys(prefix))
		}
	}
	return n
}

// keysByServer names the keys under prefix on each running server of cl,
// as "server I: KEY, ...", for a failure message (key names hold resource
// names, never lock values).
func keysByServer(cl *redlocktest.Cluster, prefix string) string {
	var parts []string
	for i, s := range cl.Servers {
		if s.Running() {
			if keys := s.MustKeys(prefix); len(keys) > 0 {
				slices.Sort(keys)
				parts = append(parts, fmt.Sprintf("server %d: %s", i, strings.Join(keys, ", ")))
			}
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// lockOnAll locks resource and waits until every node of cl holds its key:
// TryLock returns at the quorum, and the other requests may land later, or
// never: a request whose node timeout passes before it is sent is dropped
// (over rueidis on a loaded machine, about one fresh client in 90 lost its
// first request to a node: "condition not met within 2s: the lock key set
// on all 5 nodes"). Then it unlocks and locks again, up to three times.
func lockOnAll(t *testing.T, cl *redlocktest.Cluster, c *redlock.Client, resource string) *redlock.Lock {
	t.Helper()
	everywhere := func(want int) func() bool {
		return func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == want }
	}
	for try := 1; ; try++ {
		l, err := c.TryLock(t.Context(), resource)
		if err != nil {
			t.Fatal(err)
		}
		if within(2*time.Second, everywhere(len(cl.Servers))) {
			return l
		}
		if try == 3 {
			t.Fatalf("the lock key was not set on all %d nodes in %d tries: %d keys", len(cl.Servers), try, keysEverywhere(cl, redlock.DefaultKeyPrefix))
		}
		// A lock of a short ttl may have expired meanwhile: Unlock
		// then says ErrNotHeld, and its keys are gone all the same.
		if err := l.Unlock(t.Context()); err != nil && !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatal(err)
		}
		redlocktest.Eventually(t, 10*time.Second, everywhere(0), "the lock's keys left after Unlock")
	}
}

// within polls cond until it holds (true) or d passes (false).
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond) // polling interval, bounded by the deadline
	}
	return true
}

func TestMutualExclusionUnderContention(t *testing.T) { // R1.1, R13
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl, c := cluster(t, a, 5, redlock.WithTTL(2*time.Second), redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond))
		const workers, each = 8, 25
		var holders, maxHolders, total atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					l, err := c.Lock(t.Context(), "counter")
					if err != nil {
						errs <- err
						return
					}
					h := holders.Add(1)
					for {
						m := maxHolders.Load()
						if h <= m || maxHolders.CompareAndSwap(m, h) {
							break
						}
					}
					total.Add(1)
					holders.Add(-1)
					if err := l.Unlock(t.Context()); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("worker: %v", err)
		}
		if got := maxHolders.Load(); got != 1 {
			t.Fatalf("at most %d holders at once, want 1", got)
		}
		if got := total.Load(); got != workers*each {
			t.Fatalf("critical sections = %d, want %d", got, workers*each)
		}
		redlocktest.Eventually(t, 5*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 },
			"lock keys left on the nodes after every lock was released")
	})
}

func TestNoStrayKeysAfterFailedAttempts(t *testing.T) { // R8.5, R11
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 5)
		clients := make([]*redlock.Client, 6)
		for i := range clients {
			clients[i] = dial(t, a, cl)
		}
		for round := 0; round < 20; round++ {
			var wg sync.WaitGroup
			locks := make([]*redlock.Lock, len(clients))
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					locks[i], _ = c.TryLock(t.Context(), "contended")
				}()
			}
			wg.Wait()
			held := 0
			for _, l := range locks {
				if l != nil {
					held++
					if err := l.Unlock(t.Context()); err != nil {
						t.Fatalf("Unlock: %v", err)
					}
				}
			}
			if held > 1 {
				t.Fatalf("round %d: %d clients hold the lock at once", round, held)
			}
			// Every failed attempt gave back its keys (those that answered after
			// the decision as soon as they answered), and the winner's Unlock
			// removed the rest: no key waits for its 10s expiry.
			redlocktest.Eventually(t, 10*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 },
				"round %d: keys left after every attempt ended", round)
		}
	})
}

func TestMinorityDown(t *testing.T) { // R1.3
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		// A 5s ttl: nothing here waits for it, and with 1s a loaded
		// machine's stall between TryLock and Extend could end the lock.
		// Releases wait up to 10s rather than the default 1s: with two
		// nodes down the quorum needs all three others, and on a loaded
		// machine a healthy node answered a release after more than 1s
		// (TestTokensIncreaseInGrantOrder).
		cl, c := cluster(t, a, 5, redlock.WithTTL(5*time.Second), redlock.WithReleaseTimeout(10*time.Second))
		cl.Servers[0].Kill()
		cl.Servers[3].Kill()
		ctx := t.Context()
		l, err := c.TryLock(ctx, "r")
		if err != nil {
			t.Fatalf("TryLock with 2 of 5 nodes down: %v", err)
		}
		before := l.Until()
		if err := l.Extend(ctx); err != nil {
			t.Fatalf("Extend with 2 of 5 nodes down: %v", err)
		}
		if !l.Until().After(before) {
			t.Fatalf("Until did not move forward: %v then %v", before, l.Until())
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock with 2 of 5 nodes down: %v", err)
		}
		if n := keysEverywhere(cl, redlock.DefaultKeyPrefix); n != 0 {
			t.Fatalf("%d keys left after Unlock", n)
		}
	})
}

func TestMajorityDown(t *testing.T) { // R1.3, R8.5
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl, c := cluster(t, a, 5)
		for _, i := range []int{0, 2, 4} {
			cl.Servers[i].Kill()
		}
		start := time.Now()
		l, err := c.TryLock(t.Context(), "r")
		elapsed := time.Since(start)
		if l != nil || !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrNoQuorum) {
			t.Fatalf("TryLock with 3 of 5 down = %v, %v; want ErrNotAcquired and ErrNoQuorum", l, err)
		}
		var ae *redlock.AcquireError
		if !errors.As(err, &ae) {
			t.Fatalf("error %T is not an *AcquireError", err)
		}
		if got := ae.Count(redlock.Failed) + ae.Count(redlock.TimedOut); got != 3 {
			t.Errorf("failed nodes = %d, want 3: %v", got, err)
		}
		// TryLock's attempt is final: it reports every node, none "no reply".
		if got := ae.Count(redlock.Acquired); got != 2 || ae.Count(redlock.NoReply) != 0 {
			t.Errorf("acquired = %d, no reply = %d; want 2 and 0: %v", got, ae.Count(redlock.NoReply), err)
		}
		if len(ae.Nodes) != 5 || ae.Nodes[0].Node != cl.Servers[0].Addr() {
			t.Errorf("per-node outcomes = %+v, want 5 named after their addresses", ae.Nodes)
		}
		// Killed nodes refuse connections at once; a generous bound, far above
		// the 50ms node timeout and a test process not run for a second
		// or two, only catches a client that waits on them.
		if elapsed > 5*time.Second {
			t.Errorf("TryLock took %v with 3 nodes down", elapsed)
		}
		// R8.5: a final attempt gave back every key before it returned.
		if n := keysEverywhere(cl, redlock.DefaultKeyPrefix); n != 0 {
			t.Fatalf("%d keys left on the live nodes after a failed TryLock", n)
		}
	})
}

func TestFrozenNodeIsNotWaitedFor(t *testing.T) { // R8.2, R15
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		// A node timeout of 30s: had the client waited for the frozen
		// node, the acquisition would take 30s. The bound is a third of
		// that, far above what 4 live nodes take on a loaded machine.
		const ttl, nodeTimeout = time.Minute, 30 * time.Second
		cl, c := cluster(t, a, 5, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
		cl.Servers[1].Freeze()
		start := time.Now()
		l, err := c.TryLock(t.Context(), "r")
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("TryLock with one node frozen: %v", err)
		}
		if elapsed > nodeTimeout/3 {
			t.Fatalf("TryLock took %v: it waited for the frozen node", elapsed)
		}
		if v := l.Validity(); v < ttl-nodeTimeout/3-2*time.Second {
			t.Fatalf("validity %v, want close to the %v ttl", v, ttl)
		}
		cl.Servers[1].Thaw()
		if err := l.Unlock(t.Context()); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	})
}

func TestUnlockNeverDeletesAnotherHoldersKey(t *testing.T) { // R5
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl, c := cluster(t, a, 5, redlock.WithTTL(time.Second))
		ctx := t.Context()
		// Lock with tries: a 1 s lock is refused when the test process
		// was not run for that long during the attempt.
		first, err := c.Lock(ctx, "r", redlock.WithTries(10))
		if err != nil {
			t.Fatal(err)
		}
		redlocktest.Eventually(t, 5*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 },
			"keys of an expired lock still present")
		second, err := c.TryLock(ctx, "r", redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatalf("second holder after expiry: %v", err)
		}
		if err := first.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("Unlock of an expired lock = %v, want ErrNotHeld", err)
		}
		// TryLock returns at quorum: wait for second's last SETs, then check that first's
		// late Unlock took none of them.
		redlocktest.Eventually(t, 10*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 5 },
			"the second holder's keys on all 5 nodes after the first holder's late Unlock")
		for _, s := range cl.Servers {
			if v, _ := s.Client().Get(ctx, redlock.DefaultKeyPrefix+"r").Result(); v != second.Value() {
				t.Fatalf("node %s holds %q, want the second holder's value", s.Addr(), v)
			}
		}
		if err := second.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := second.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("second Unlock = %v, want ErrNotHeld", err)
		}
	})
}

func TestExtend(t *testing.T) { // R17
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		ctx := t.Context()
		// Extend's requests, as TryLock's, return at a quorum; the
		// nodes' own clocks say whether the expiry moved: PEXPIRETIME
		// (absolute) after Extend is later than before on a quorum, by
		// at least the 100ms that the nodes saw pass. A PTTL read right
		// after Extend failed under load ("PTTL = -2ns": that node never
		// got TryLock's SET).
		t.Run("MovesUntilAndResetsTTL", func(t *testing.T) {
			const ttl = 2 * time.Second
			cl, c := cluster(t, a, 5, redlock.WithTTL(ttl))
			key := redlock.DefaultKeyPrefix + "r"
			l := lockOnAll(t, cl, c, "r")
			before := l.Until()
			expiry := make([]int64, len(cl.Servers)) // ms since the epoch, on each node
			for i, s := range cl.Servers {
				if expiry[i] = s.Client().PExpireTime(ctx, key).Val().Milliseconds(); expiry[i] <= 0 {
					t.Fatalf("PEXPIRETIME on %s = %d, want the lock's expiry", s.Addr(), expiry[i])
				}
			}
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				for _, s := range cl.Servers {
					if s.Client().PTTL(ctx, key).Val() > ttl-100*time.Millisecond {
						return false
					}
				}
				return true
			}, "100ms pass on every node")
			if err := l.Extend(ctx); err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if !l.Until().After(before) {
				t.Fatalf("Until %v not after %v", l.Until(), before)
			}
			moved := func() (n int) {
				for i, s := range cl.Servers {
					if s.Client().PExpireTime(ctx, key).Val().Milliseconds() >= expiry[i]+100 {
						n++
					}
				}
				return n
			}
			redlocktest.Eventually(t, 10*time.Second, func() bool { return moved() >= 3 },
				"the expiry moved on %d of 5 nodes after Extend, want a quorum", moved())
			for _, s := range cl.Servers {
				if d := s.Client().PTTL(ctx, key).Val(); d > ttl {
					t.Fatalf("PTTL on %s = %v after Extend, want at most the ttl %v", s.Addr(), d, ttl)
				}
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l.Extend(ctx); !errors.Is(err, redlock.ErrNotHeld) {
				t.Fatalf("Extend after Unlock = %v, want ErrNotHeld", err)
			}
		})
		t.Run("AfterExpiryCreatesNothing", func(t *testing.T) {
			cl, c := cluster(t, a, 5, redlock.WithTTL(time.Second))
			l, err := c.Lock(ctx, "r", redlock.WithTries(10)) // a 1 s lock: see above
			if err != nil {
				t.Fatal(err)
			}
			redlocktest.Eventually(t, 5*time.Second, func() bool {
				return l.Validity() == 0 && keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0
			}, "lock expiry")
			if err := l.Extend(ctx); !errors.Is(err, redlock.ErrNotHeld) {
				t.Fatalf("Extend after expiry = %v, want ErrNotHeld", err)
			}
			if n := keysEverywhere(cl, redlock.DefaultKeyPrefix); n != 0 {
				t.Fatalf("Extend after expiry re-created %d keys", n)
			}
		})
		t.Run("KeysLostOnMajority", func(t *testing.T) {
			cl, c := cluster(t, a, 5)
			l := lockOnAll(t, cl, c, "r")
			for _, s := range cl.Servers[:3] {
				s.Client().Del(ctx, redlock.DefaultKeyPrefix+"r")
			}
			if err := l.Extend(ctx); !errors.Is(err, redlock.ErrNotHeld) {
				t.Fatalf("Extend with keys gone on 3 of 5 = %v, want ErrNotHeld", err)
			}
			if n := keysEverywhere(cl, redlock.DefaultKeyPrefix); n != 2 {
				t.Fatalf("keys after a refused Extend = %d, want the 2 untouched ones", n)
			}
		})
	})
}

func TestLockWaitsAndReportsContextEnd(t *testing.T) { // R10
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		_, c := cluster(t, a, 5)
		ctx := t.Context()
		held, err := c.TryLock(ctx, "busy")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Unlock(ctx)

		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err = c.Lock(cctx, "busy")
		if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock until deadline = %v, want ErrNotAcquired and DeadlineExceeded", err)
		}
		var ae *redlock.AcquireError
		if !errors.As(err, &ae) || ae.Attempts < 1 || len(ae.Nodes) != 5 {
			t.Fatalf("AcquireError = %+v, want attempts and 5 node outcomes", ae)
		}

		_, err = c.Lock(ctx, "busy", redlock.WithTries(3), redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
		if !errors.As(err, &ae) || ae.Attempts != 3 || errors.Is(err, redlock.ErrNoQuorum) {
			t.Fatalf("Lock with 3 tries = %v (attempts %d), want 3 attempts, held elsewhere", err, ae.Attempts)
		}

		// A waiter gets the lock once the holder releases it.
		got := make(chan error, 1)
		go func() {
			l, err := c.Lock(ctx, "handoff", redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond))
			if err == nil {
				err = l.Unlock(ctx)
			}
			got <- err
		}()
		first, err := c.TryLock(ctx, "handoff")
		if err == nil {
			_ = first.Unlock(ctx)
		}
		if err := <-got; err != nil {
			t.Fatalf("waiter: %v", err)
		}
	})
}

func TestDial(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		for _, tt := range []struct {
			name string
			urls []string
		}{
			{"no URLs", nil},
			{"unknown scheme", []string{"redis://127.0.0.1:1", "memcached://127.0.0.1:2"}},
			{"duplicate", []string{"redis://127.0.0.1:1", "redis://127.0.0.1:1"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if _, err := a.dial(tt.urls); !errors.Is(err, redlock.ErrInvalid) {
					t.Fatalf("%s.Dial(%v) = %v, want ErrInvalid", a.name, tt.urls, err)
				}
			})
		}
		t.Run("NodeDownAtStart", func(t *testing.T) { // R1.3: a majority suffices
			cl := redlocktest.Start(t, 4)
			cl.Servers[3].Kill()
			c := dial(t, a, cl)
			l, err := c.TryLock(t.Context(), "r")
			if err != nil {
				t.Fatalf("TryLock with one of 4 URLs down: %v", err)
			}
			_ = l.Unlock(t.Context())
		})
		t.Run("Closed", func(t *testing.T) {
			c, err := a.dial([]string{"redis://127.0.0.1:1"})
			if err != nil {
				t.Fatal(err)
			}
			_ = c.Close()
			if _, err := c.TryLock(t.Context(), "r"); !errors.Is(err, redlock.ErrClosed) {
				t.Fatalf("TryLock after Close = %v, want ErrClosed", err)
			}
		})
	})
}

func TestUnlockTellsLostFromUnconfirmed(t *testing.T) { // R5, R12
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl, c := cluster(t, a, 5)
		ctx := t.Context()
		l := lockOnAll(t, cl, c, "r")
		for _, s := range cl.Servers[:3] {
			s.Kill()
		}
		err := l.Unlock(ctx)
		if !errors.Is(err, redlock.ErrUnlockFailed) || errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("Unlock with 3 of 5 nodes down = %v, want ErrUnlockFailed (not ErrNotHeld)", err)
		}
		var ne *redlock.NodeError
		if !errors.As(err, &ne) || ne.Node == "" {
			t.Fatalf("Unlock error %v names no node", err)
		}
		if n := keysEverywhere(cl, redlock.DefaultKeyPrefix); n != 0 {
			t.Fatalf("%d keys left on the live nodes after Unlock", n)
		}
	})
}

func TestCloseDuringAcquisitions(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		c := dial(t, a, cl)
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 20; j++ {
					l, err := c.TryLock(t.Context(), "r"+strconv.Itoa(i))
					if err != nil {
						if !errors.Is(err, redlock.ErrClosed) && !errors.Is(err, redlock.ErrNotAcquired) {
							t.Errorf("TryLock during Close: %v", err)
						}
						return
					}
					_ = l.Unlock(t.Context())
				}
			}()
		}
		_ = c.Close()
		wg.Wait()
		if _, err := c.TryLock(t.Context(), "after"); !errors.Is(err, redlock.ErrClosed) {
			t.Fatalf("TryLock after Close = %v, want ErrClosed", err)
		}
	})
}
