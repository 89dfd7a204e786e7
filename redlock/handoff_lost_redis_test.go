package redlock_test

import (
	"errors"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestHandOverReportsALostLock over real nodes: FLUSHALL on every
// node while a Lock call of the same client waits, then Unlock.
func TestHandOverReportsALostLockRedis(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		c := dialURLs(t, a, cl.URLs(), redlock.WithNodeTimeout(time.Second))
		l, err := c.Lock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *redlock.Lock, 1)
		go func() {
			w, _ := c.Lock(t.Context(), "r")
			got <- w
		}()
		redlocktest.Eventually(t, 10*time.Second, func() bool { return redlock.Queued(c, "r") }, "the waiter queues")
		for _, s := range cl.Servers {
			if err := s.Client().FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		err = l.Unlock(t.Context())
		if !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Unlock of a lock flushed from every node, with a waiter in the same client = %v, want ErrNotHeld", err)
		}
		w := <-got
		if w == nil {
			t.Fatal("the waiter got no lock after the holder's lost lock was unlocked")
		}
		_ = w.Unlock(t.Context())
	})
}
