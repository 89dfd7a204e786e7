package redlock_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// Every lock whose ttl is over a node's max ttl is refused, a lock handed
// over included. Regression: a Lock call that began before the nodes
// restarted advertising a smaller max ttl, and waited, was handed the lock
// by its client's Unlock with the old ttl, where every fresh Lock is
// refused (the check ran once per Lock call).
func TestHandOverChecksTheMaxTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := waitOverMaxTTLDrop(t, true)
		if !errors.Is(err, redlock.ErrInvalid) {
			if err == nil {
				defer w.Unlock(t.Context())
				t.Errorf("the waiter was handed a lock of ttl %v (validity %v) on nodes that now advertise max ttl 10s", w.TTL(), w.Validity())
			} else {
				t.Errorf("waiter: %v, want ErrInvalid (ttl over the nodes' max ttl)", err)
			}
		}
	})
}

// The same without a hand-over: the check runs before every attempt.
// Regression: it ran once per Lock call, so a call that began before the
// restart and kept retrying got a 30s lock on nodes that now advertise 10s.
func TestRetryingLockChecksTheMaxTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := waitOverMaxTTLDrop(t, false)
		if !errors.Is(err, redlock.ErrInvalid) {
			if err == nil {
				defer w.Unlock(t.Context())
				t.Errorf("a Lock call that kept retrying got a lock of ttl %v (validity %v) on nodes that now advertise max ttl 10s", w.TTL(), w.Validity())
			} else {
				t.Errorf("retrying Lock: %v, want ErrInvalid (ttl over the nodes' max ttl)", err)
			}
		}
	})
}

// waitOverMaxTTLDrop returns what a Lock call of ttl 30s over 3 nodes
// advertising max ttl 40s got when it waited for the holder's lock while
// the nodes restarted advertising 10s, and the holder then unlocked. The
// holder is the waiter's own client when handOver is set (its Unlock
// hands the lock over), another client otherwise (the waiter retries).
func waitOverMaxTTLDrop(t *testing.T, handOver bool) (*redlock.Lock, error) {
	t.Helper()
	nodes, mems := redlocktest.NewMemNodes(3)
	for _, m := range mems {
		m.SetFacts(adapter.Facts{Addr: m.String(), RunID: "r" + m.String(), MaxTTL: 40 * time.Second})
	}
	c, err := redlock.New(nodes, redlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	holder := c
	if !handOver {
		if holder, err = redlock.New(nodes, redlock.WithTTL(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { holder.Close() })
	}
	l, err := holder.Lock(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var w *redlock.Lock
	go func() {
		var err error
		w, err = c.Lock(t.Context(), "r")
		got <- err
	}()
	if handOver {
		for !redlock.Queued(c, "r") {
			time.Sleep(10 * time.Millisecond) // synctest: until the waiter queued
		}
	} else {
		time.Sleep(time.Second) // the other client retries
	}
	for _, m := range mems {
		m.SetFacts(adapter.Facts{Addr: m.String(), RunID: "r2" + m.String(), MaxTTL: 10 * time.Second}) // restarted so
	}
	if _, err := c.TryLock(t.Context(), "other"); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("control: a fresh 30s lock on nodes advertising 10s = %v, want ErrInvalid", err)
	}
	_ = l.Unlock(t.Context())
	err = <-got
	return w, err
}
