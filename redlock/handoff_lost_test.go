package redlock_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Unlock returns ErrNotHeld when too many nodes answered that the key was
// gone or not this lock's: the holder learns that its lock was not held to
// the end, whether or not a Lock call of the same client waits for the
// resource. Regression: the hand-over's Transfer also set a key that was
// gone, so a lock lost before Unlock (forced away, evicted, forgotten) made
// Unlock return nil when a waiter of the same client was handed the key.
// The waiter then acquires as usual.
func TestHandOverReportsALostLock(t *testing.T) {
	for _, waiter := range []bool{false, true} {
		name := "no waiter"
		if waiter {
			name = "a waiter in the same client"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l, err := c.Lock(t.Context(), "r")
				if err != nil {
					t.Fatal(err)
				}
				got := make(chan *redlock.Lock, 1)
				if waiter {
					go func() {
						w, err := c.Lock(t.Context(), "r")
						if err != nil {
							t.Errorf("waiter: %v, want the lock", err)
						}
						got <- w
					}()
					for !redlock.Queued(c, "r") {
						time.Sleep(10 * time.Millisecond) // synctest: until the waiter queued
					}
				}
				for _, m := range mems {
					m.Forget() // the lock is gone from every node (a FLUSHALL, a forced release)
				}
				err = l.Unlock(t.Context())
				if !errors.Is(err, redlock.ErrNotHeld) {
					t.Errorf("%s: Unlock of a lock gone from every node = %v, want ErrNotHeld", name, err)
				}
				if waiter {
					if w := <-got; w != nil {
						_ = w.Unlock(t.Context())
					}
				}
			})
		})
	}
}
