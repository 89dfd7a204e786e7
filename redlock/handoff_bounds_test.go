package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
)

// A client that waits for many keys, one after another, keeps bounded
// state in its hand-off (turns for at most RestKeys keys without waiters,
// no key listened on once nobody waits, no queue left), and leaves no
// subscription behind on any node.
func TestHandoffStateStaysBounded(t *testing.T) { // R14
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := slowMemNodes(3, 100*time.Microsecond)
		holder := memClient(t, nodes, redlock.WithTTL(time.Minute))
		waiter := memClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithRetryDelay(time.Minute, time.Minute))
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		const keys = 3 * redlock.RestKeys
		maxTurns := 0
		for i := range keys {
			key := fmt.Sprintf("k%d", i)
			l, err := holder.TryLock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				l2, err := waiter.Lock(ctx, key)
				if err == nil {
					err = l2.Unlock(ctx)
				}
				got <- err
			}()
			time.Sleep(5 * time.Millisecond) // the waiter fails once, queues and listens
			synctest.Wait()
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			turns, _, _, _ := redlock.HandoffState(waiter)
			maxTurns = max(maxTurns, turns)
		}
		synctest.Wait()
		turns, watched, queues, own := redlock.HandoffState(waiter)
		t.Logf("after %d keys: turns of %d keys (at most %d), %d listened on, %d queues, %d own values", keys, turns, maxTurns, watched, queues, own)
		if maxTurns > redlock.RestKeys+1 || watched != 0 || queues != 0 || own > 64 {
			t.Errorf("after %d keys: turns of %d keys (at most %d, want <= %d), %d keys listened on, %d queues (want 0), %d own values (want <= 64)",
				keys, turns, maxTurns, redlock.RestKeys+1, watched, queues, own)
		}
		for i := range keys {
			for _, m := range mems {
				if n := m.Watchers(fmt.Sprintf("dlm:lock:k%d", i)); n != 0 {
					t.Fatalf("%s listens to k%d's releases %d times after its waiter left", m, i, n)
				}
			}
		}
	})
}

// Close while the waiters of many keys are subscribing (one goroutine per
// node runs the subscriptions in the background) ends every Lock call with
// ErrClosed, leaves no goroutine behind (synctest would report it) and no
// subscription on any node.
func TestHandoffCloseWhileSubscribing(t *testing.T) { // R14
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := slowMemNodes(3, 100*time.Microsecond)
		holder := memClient(t, nodes, redlock.WithTTL(time.Minute))
		waiter, err := redlock.New(nodes, redlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		const keys = 50
		got := make(chan error, keys)
		for i := range keys {
			key := fmt.Sprintf("c%d", i)
			if _, err := holder.TryLock(ctx, key); err != nil {
				t.Fatal(err)
			}
			go func() {
				_, err := waiter.Lock(ctx, key)
				got <- err
			}()
		}
		time.Sleep(300 * time.Microsecond) // the first attempts fail; waiters queue
		if err := waiter.Close(); err != nil {
			t.Fatal(err)
		}
		for range keys {
			if err := <-got; !errors.Is(err, redlock.ErrClosed) {
				t.Fatalf("Lock after Close: %v, want ErrClosed", err)
			}
		}
		synctest.Wait()
		for i := range keys {
			for _, m := range mems {
				if n := m.Watchers(fmt.Sprintf("dlm:lock:c%d", i)); n != 0 {
					t.Fatalf("%s: %d subscriptions to c%d after Close", m, n, i)
				}
			}
		}
	})
}
