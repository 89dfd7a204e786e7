package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

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
