package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A defect and its class: every public call that blocks returns
// by its context's deadline, whatever the nodes do. Three MemNodes, one
// frozen (a stopped process: requests wait unanswered) and one down; the
// call gets a deadline well under what the client would otherwise wait
// for (the adaptive node timeout starts at its 1 s limit, and the
// releases of a failed last attempt had twice that). What the call leaves
// owed (releases on the frozen node) goes on in the background: after the
// node thaws, Close waits for it and no key of the call is left there (of
// a call with a value of the caller's, none once the ttl has passed).
//
// Before the fix, TryLock, TryRLock, TryWLock and TryLockAll returned
// after 3 s of fake time (1 s attempt + 2 s waiting for the frozen node's
// release), WLock after its deadline plus the release timeout (the removal
// of its waiting marks), and Unlock and Release after the release timeout
// (1 s) with a 0.5 s deadline. WLock is the one exception, by design: a
// writer whose context ended removes its waiting marks before it returns,
// so that readers are admitted again, for at most one node timeout (here
// its 1 s limit).
func TestEveryBlockingCallKeepsItsDeadline(t *testing.T) {
	const deadline = 1200 * time.Millisecond
	type call func(ctx context.Context, c *redlock.Client, held *redlock.Lock) error
	acquire := func(f func(context.Context, *redlock.Client) (*redlock.Lock, error)) call {
		return func(ctx context.Context, c *redlock.Client, _ *redlock.Lock) error {
			l, err := f(ctx, c)
			if err == nil {
				_ = l.Unlock(context.Background())
			}
			return err
		}
	}
	rows := []struct {
		name string
		hold bool // acquire "r" on healthy nodes first, then freeze and down
		call call
		more time.Duration // allowed past the deadline
	}{
		{"TryLock", false, acquire(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(ctx, "r") }), 0},
		{"Lock", false, acquire(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.Lock(ctx, "r") }), 0},
		{"Lock/WithValue", false, acquire(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.Lock(ctx, "r", redlock.WithValue("a-value-of-the-callers-0123456789"))
		}), 0},
		{"TryRLock", false, acquire(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.TryRLock(ctx, "r") }), 0},
		{"RLock", false, acquire(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.RLock(ctx, "r") }), 0},
		{"TryWLock", false, acquire(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.TryWLock(ctx, "r") }), 0},
		{"WLock", false, acquire(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.WLock(ctx, "r") }), time.Second},
		{"TryLockAll", false, acquire(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.TryLockAll(ctx, []string{"r", "s"})
		}), 0},
		{"LockAll", false, acquire(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.LockAll(ctx, []string{"r", "s"})
		}), 0},
		{"Extend", true, func(ctx context.Context, _ *redlock.Client, l *redlock.Lock) error { return l.Extend(ctx) }, 0},
		{"Unlock", true, func(ctx context.Context, _ *redlock.Client, l *redlock.Lock) error { return l.Unlock(ctx) }, 0},
		{"Resume", true, func(ctx context.Context, c *redlock.Client, l *redlock.Lock) error {
			r, err := c.Resume(ctx, l.Handle())
			if err == nil {
				_ = r.Unlock(context.Background())
			}
			return err
		}, 0},
		{"Release", true, func(ctx context.Context, c *redlock.Client, l *redlock.Lock) error { return c.Release(ctx, l.Handle()) }, 0},
		{"Do", false, func(ctx context.Context, c *redlock.Client, _ *redlock.Lock) error {
			return c.Do(ctx, "r", func(context.Context) error { return nil })
		}, 0},
		{"PutRecord", true, func(ctx context.Context, _ *redlock.Client, l *redlock.Lock) error { return l.PutRecord(ctx, "rec") }, 0},
		{"ReadRecords", true, func(ctx context.Context, c *redlock.Client, _ *redlock.Lock) error {
			_, err := c.ReadRecords(ctx, "r")
			return err
		}, 0},
		{"Inspect", true, func(ctx context.Context, c *redlock.Client, _ *redlock.Lock) error {
			_, err := c.Inspect(ctx, "r")
			return err
		}, 0},
		{"Locks", true, func(ctx context.Context, c *redlock.Client, _ *redlock.Lock) error {
			_, _, err := c.Locks(ctx, 0)
			return err
		}, 0},
		{"ForceRelease", true, func(ctx context.Context, c *redlock.Client, _ *redlock.Lock) error {
			_, err := c.ForceRelease(ctx, "r")
			return err
		}, 0},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				var held *redlock.Lock
				if row.hold {
					if held, err = c.Lock(t.Context(), "r"); err != nil {
						t.Fatal(err)
					}
				}
				mems[1].Freeze()
				mems[2].SetDown(true)
				d := deadline
				if row.hold {
					d = 500 * time.Millisecond // under the release timeout (1 s)
				}
				ctx, cancel := context.WithTimeout(t.Context(), d)
				start := time.Now()
				err = row.call(ctx, c, held)
				elapsed := time.Since(start)
				cancel()
				if elapsed > d+row.more {
					t.Errorf("%s returned after %v, past its context's deadline %v (err %v)", row.name, elapsed, d, err)
				}
				if err == nil && row.name != "ReadRecords" { // a read reports per node
					t.Errorf("%s succeeded without a quorum", row.name)
				}
				mems[1].Thaw()
				mems[2].SetDown(false)
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				if !row.hold {
					if row.name == "Lock/WithValue" {
						// A failed attempt with a value of the caller's
						// does not release the node whose answer it lost
						// (it may hold another holder's key with that
						// value: fan.releaseNode), so its own key may stay
						// there, but no longer than the ttl (10 s) from the
						// thaw, when the node applies it.
						time.Sleep(11 * time.Second)
					}
					for _, key := range []string{defectKey("r"), defectKey("s")} {
						if _, ok, _ := mems[1].Value(context.Background(), key); ok {
							t.Errorf("%s left key %s on the frozen node after it thawed and Close returned", row.name, key)
						}
					}
				}
			})
		})
	}
}

// The class of TestEveryBlockingCallKeepsItsDeadline for an Unlock that
// hands the lock over to a waiting Lock call of its client (handoff.go):
// the hand-over's acquisition for the waiter goes on, but Unlock returns
// by its context's deadline.
func TestUnlockHandingOverKeepsItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.Lock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Value() // read: the hand-over must acquire, not keep
		waiterCtx, stopWaiter := context.WithCancel(t.Context())
		waited := make(chan error, 1)
		go func() {
			w, err := c.Lock(waiterCtx, "r", redlock.WithRetryDelay(time.Hour, time.Hour))
			if err == nil {
				_ = w.Unlock(context.Background())
			}
			waited <- err
		}()
		synctest.Wait() // the waiter failed once and waits in the queue
		mems[1].Freeze()
		mems[2].SetDown(true)
		const d = 500 * time.Millisecond
		ctx, cancel := context.WithTimeout(t.Context(), d)
		start := time.Now()
		err = l.Unlock(ctx)
		elapsed := time.Since(start)
		cancel()
		if elapsed > d {
			t.Errorf("Unlock handing over returned after %v, past its deadline %v (err %v)", elapsed, d, err)
		}
		stopWaiter()
		mems[1].Thaw()
		mems[2].SetDown(false)
		<-waited
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// lateTimer is a context whose deadline has passed while the timer that
// ends it has not run yet, as on a loaded machine, where the runtime runs
// timers late: Err is nil and Done is open, but Deadline is behind.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

// A call whose deadline has passed makes no attempt, even while the
// context's timer has not run: it could only fail, and its requests and
// releases (R8.5) would load every node for nothing. In a loaded run of
// the benchmark across processes (cd bench && go run . -only mp), every
// "gave up" of dlm's Lock was such a call (37 of 37, the deadline 6 ms
// behind, every node "no reply"), each worker spinning on it until the
// timer ran. Before the fix each row made an attempt, and over in-memory
// nodes, which answer at once, even got the lock ("acquired past the
// deadline").
func TestPastDeadlineMakesNoAttempt(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error)
	}{
		{"Lock", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.Lock(ctx, "r") }},
		{"TryLock", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(ctx, "r") }},
		{"LockAll", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.LockAll(ctx, []string{"r", "s"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, _ := redlocktest.NewMemNodes(3)
				obs := &attempts{}
				c := memClient(t, nodes, redlock.WithObserver(obs))
				ctx := lateTimer{context.Background(), time.Now().Add(-time.Millisecond)}
				l, err := tc.call(ctx, c)
				if err == nil {
					_ = l.Unlock(context.Background())
					t.Fatal("acquired past the deadline")
				}
				if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, redlock.ErrNotAcquired) {
					t.Errorf("err = %v, want ErrNotAcquired and context.DeadlineExceeded", err)
				}
				if n := obs.count(); n != 0 {
					t.Errorf("%d attempts, want 0", n)
				}
			})
		})
	}
}

// Unlock and Release with a context whose deadline had passed when they
// were called learn whether the lock was released, as with a context
// already done (the releases' answers bound the wait, not the context),
// also while the context's timer has not run: a loaded machine runs
// timers late. Before the fix the wait ended when the timer ran, a moment
// later, before the nodes answered: "Unlock = redlock: unlock failed ...
// context deadline exceeded, want nil".
func TestPastDeadlineReleaseLearnsTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release func(ctx context.Context, c *redlock.Client, l *redlock.Lock) error
	}{
		{"Unlock", func(ctx context.Context, _ *redlock.Client, l *redlock.Lock) error { return l.Unlock(ctx) }},
		{"Release", func(ctx context.Context, c *redlock.Client, l *redlock.Lock) error { return c.Release(ctx, l.Handle()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				c := memClient(t, nodes)
				l, err := c.TryLock(t.Context(), "r")
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait() // the requests still on their way after the quorum land first
				for _, m := range mems {
					m.SetSlow(20 * time.Millisecond)
				}
				// The deadline passed a millisecond ago; its timer runs
				// 5 ms into the call, before the nodes answer.
				timer, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				defer cancel()
				ctx := lateTimer{timer, time.Now().Add(-time.Millisecond)}
				if err := tc.release(ctx, c, l); err != nil {
					t.Errorf("%s = %v, want nil", tc.name, err)
				}
			})
		})
	}
}
