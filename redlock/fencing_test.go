package redlock_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestTokensIncreaseInGrantOrder: 1,000 grants of one resource by several
// fenced clients, with one node killed and another restarted on the way;
// every token is larger than the one before it (R18). The nodes keep their
// data across the restart (R16.2: AOF, appendfsync always), as fencing
// requires.
func TestTokensIncreaseInGrantOrder(t *testing.T) { // R18, R16
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		// AOF with appendfsync always, in a directory on tmpfs when there is
		// one: the data survives the process's death (what is under test)
		// without paying a disk fsync per write.
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			t.Setenv("TMPDIR", "/dev/shm")
		}
		cl := redlocktest.Start(t, 5, redlocktest.WithPersistence())
		const clients, grants = 3, 1000
		// The releases wait for a node as long as it takes (up to 10s)
		// instead of the default 1s: the 1,000 grants go to five
		// redis-servers with fsync on every write while the suite loads the
		// machine, and a healthy node answered a release after 1.26s at load
		// 30 (the quorum needed it where one node is down), which Unlock
		// reports as not confirmed. The test is about tokens; only the
		// killed and the restarted node may fail a release.
		opts := []redlock.Option{redlock.WithFencing(), redlock.WithTTL(2 * time.Second), redlock.WithNodeTimeout(500 * time.Millisecond),
			redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond), redlock.WithReleaseTimeout(10 * time.Second)}
		cs := make([]*redlock.Client, clients)
		for i := range cs {
			cs[i] = dial(t, a, cl, opts...)
		}
		var (
			mu      sync.Mutex
			n       int
			last    uint64
			bad     []string
			killAt  = make(chan struct{})
			restart = make(chan struct{})
			resumed = make(chan struct{})
		)
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for _, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					l, err := c.Lock(t.Context(), "fenced")
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					done, across := n >= grants, false
					if !done {
						n++
						if tok := l.Token(); tok <= last {
							bad = append(bad, "token "+itoa(tok)+" after "+itoa(last)+" at grant "+itoa(uint64(n)))
						} else {
							last = tok
						}
						switch n {
						case grants / 3:
							close(killAt)
						case 2 * grants / 3:
							close(restart)
							across = true
						}
					}
					mu.Unlock()
					if across {
						<-resumed // hold the lock across the restart
					}
					// A lock held on a bare quorum that includes the killed or
					// the restarting node cannot confirm its release on a
					// quorum (R12): its keys expire. Any other failure counts.
					if err := l.Unlock(t.Context()); err != nil && !errors.Is(err, redlock.ErrNotHeld) &&
						!unlockFailedOnlyOn(err, cl.Servers[0].Addr(), cl.Servers[1].Addr()) {
						errs <- err
						return
					}
					if done {
						return
					}
				}
			}()
		}
		<-killAt
		cl.Servers[0].Kill()
		<-restart
		cl.Servers[1].Restart(0)
		close(resumed)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("client: %v", err)
		}
		if len(bad) > 0 {
			t.Fatalf("%d tokens out of order, first: %s", len(bad), bad[0])
		}
		if last < grants {
			t.Fatalf("last token %d after %d grants, want >= %d", last, grants, grants)
		}
	})
}

// unlockFailedOnlyOn reports whether err is an Unlock's ErrUnlockFailed
// whose every node error comes from one of nodes.
func unlockFailedOnlyOn(err error, nodes ...string) bool {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || !errors.Is(err, redlock.ErrUnlockFailed) {
		return false
	}
	for _, e := range j.Unwrap() {
		var ne *redlock.NodeError
		switch {
		case errors.Is(e, redlock.ErrUnlockFailed):
		case !errors.As(e, &ne) || !slices.Contains(nodes, ne.Node):
			return false
		}
	}
	return true
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// TestFrozenBetweenPhases: a client that stops between phase 1 and phase 2
// never ends up holding a token larger than the next holder's (R18): its
// phase 2 finds its keys gone, and it is not granted.
func TestFrozenBetweenPhases(t *testing.T) { // R18, R8.5
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		tests := []struct {
			name string
			ttl  time.Duration
			// gone makes the frozen client's keys disappear: by expiry, or by
			// deleting them (as a node whose clock jumped would).
			gone func(t *testing.T, cl *redlocktest.Cluster, key string)
		}{
			{"frozen past its ttl", time.Second, func(t *testing.T, cl *redlocktest.Cluster, key string) {
				redlocktest.Eventually(t, 10*time.Second, func() bool { return keysEverywhere(cl, key) == 0 }, "frozen client's keys did not expire")
			}},
			{"keys deleted under it within its ttl", 10 * time.Second, func(t *testing.T, cl *redlocktest.Cluster, key string) {
				for _, s := range cl.Servers {
					if err := s.Client().Del(t.Context(), key).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cl := redlocktest.Start(t, 5)
				opts := []redlock.Option{redlock.WithFencing(), redlock.WithTTL(tt.ttl), redlock.WithNodeTimeout(300 * time.Millisecond)}
				ca, cb := dial(t, a, cl, opts...), dial(t, a, cl, opts...)
				// An earlier grant, so that tokens are not all 1.
				l0, err := cb.Lock(t.Context(), "r", redlock.WithTries(10))
				if err != nil {
					t.Fatal(err)
				}
				t0 := l0.Token()
				if err := l0.Unlock(t.Context()); err != nil {
					t.Fatal(err)
				}
				paused, resume := make(chan struct{}), make(chan struct{})
				hooked := redlock.WithPhaseHook(context.Background(), func(string) { close(paused); <-resume })
				type result struct {
					l   *redlock.Lock
					err error
				}
				got := make(chan result, 1)
				go func() {
					l, err := ca.TryLock(hooked, "r")
					got <- result{l, err}
				}()
				select {
				case <-paused:
				case r := <-got:
					t.Fatalf("the client to freeze did not reach phase 2: %v", r.err)
				}
				tt.gone(t, cl, redlock.DefaultKeyPrefix+"r")
				lb, err := cb.Lock(t.Context(), "r", redlock.WithTries(50))
				if err != nil {
					close(resume)
					<-got
					t.Fatalf("next holder: %v", err)
				}
				close(resume)
				ra := <-got
				if ra.err == nil {
					if ra.l.Token() >= lb.Token() {
						t.Errorf("frozen client holds token %d, not below the next holder's %d", ra.l.Token(), lb.Token())
					}
					t.Errorf("frozen client was granted the lock (token %d) while the next holder has token %d", ra.l.Token(), lb.Token())
					_ = ra.l.Unlock(t.Context())
				} else if !errors.Is(ra.err, redlock.ErrNotAcquired) {
					t.Errorf("frozen client: err = %v, want ErrNotAcquired", ra.err)
				}
				if lb.Token() <= t0 {
					t.Errorf("next holder's token %d, want above the earlier %d", lb.Token(), t0)
				}
				// The next holder still holds its lock: the frozen client's
				// failure released nothing of it (R5).
				if err := lb.Unlock(t.Context()); err != nil {
					t.Errorf("next holder's Unlock: %v", err)
				}
			})
		}
	})
}

// TestFencePhaseFailureIsReported: phase 2 finds the keys gone on every node
// within the validity; the error names the fencing phase.
func TestFencePhaseFailureIsReported(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 5)
		// A node timeout generous enough that no request of phase 1 is given
		// up before it is sent on a loaded machine: the hook waits for all
		// five keys.
		c := dial(t, a, cl, redlock.WithFencing(), redlock.WithNodeTimeout(5*time.Second))
		key := redlock.DefaultKeyPrefix + "r"
		hooked := redlock.WithPhaseHook(t.Context(), func(string) {
			// Every node set the key (the stragglers of phase 1 too); then it
			// goes away everywhere. The hook runs inside TryLock: it must not
			// end the test's goroutine (t.Fatal), which would leave the
			// client's attempt half done and its Close waiting for ever.
			deadline := time.Now().Add(30 * time.Second)
			for keysEverywhere(cl, key) != 5 {
				if time.Now().After(deadline) {
					t.Errorf("phase 1 did not set the key on every node within 30s (%d of 5)", keysEverywhere(cl, key))
					return
				}
				time.Sleep(10 * time.Millisecond) // polling real servers
			}
			for _, s := range cl.Servers {
				s.Client().Del(context.Background(), key)
			}
		})
		_, err := c.TryLock(hooked, "r")
		var ae *redlock.AcquireError
		if !errors.As(err, &ae) || ae.Fence == nil {
			t.Fatalf("TryLock = %v, want an AcquireError with the fencing phase's outcomes", err)
		}
		if got := ae.Count(redlock.Acquired); got < 3 {
			t.Errorf("phase 1 acquired on %d nodes, want a quorum", got)
		}
		if want := "fencing phase: 0 of 5 nodes confirmed the token, 3 needed"; !contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
		redlocktest.Eventually(t, 5*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 }, "keys left behind")
	})
}

// TestFenceRetention: with a retention, the fence key expires and tokens
// carry the clock-derived floor.
func TestFenceRetention(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		c := dial(t, a, cl, redlock.WithFencing(), redlock.WithFenceRetention(time.Hour), redlock.WithNodeTimeout(200*time.Millisecond))
		before := uint64(time.Now().UnixMicro())
		l, err := c.Lock(t.Context(), "r", redlock.WithTries(10))
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() < before {
			t.Errorf("token %d below the clock floor %d", l.Token(), before)
		}
		_ = l.Unlock(t.Context())
		// A quorum confirmed the fence (a node whose phase-1 answer came late
		// may not have).
		redlocktest.Eventually(t, 5*time.Second, func() bool {
			n := 0
			for _, s := range cl.Servers {
				d, err := s.Client().PTTL(t.Context(), redlock.DefaultFencePrefix+"r").Result()
				if err == nil && d > 59*time.Minute && d <= time.Hour {
					n++
				}
			}
			return n >= 2
		}, "fence keys without an expiry of about 1h on a quorum")
		c2 := dial(t, a, cl, redlock.WithFencing(), redlock.WithNodeTimeout(200*time.Millisecond))
		l2, err := c2.Lock(t.Context(), "r", redlock.WithTries(10))
		if err != nil {
			t.Fatal(err)
		}
		// Above it (l.Token()+1 unless a node of l2's quorum had missed the
		// first grant's repair of the new nodes: then the clock again).
		if l2.Token() <= l.Token() {
			t.Errorf("token without retention after one with = %d, want above %d", l2.Token(), l.Token())
		}
		_ = l2.Unlock(t.Context())
		// The nodes that confirmed the second grant's fence (a quorum; a node
		// whose phase-1 answer came late may not) dropped the expiry.
		redlocktest.Eventually(t, 5*time.Second, func() bool {
			n := 0
			for _, s := range cl.Servers {
				if d, err := s.Client().PTTL(t.Context(), redlock.DefaultFencePrefix+"r").Result(); err == nil && d == -1 {
					n++
				}
			}
			return n >= 2
		}, "fence keys kept their expiry after a grant without retention")
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
