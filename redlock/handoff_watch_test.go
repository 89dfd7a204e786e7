package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A client listens for a key's releases on HandoffWatchNodes nodes, chosen
// when its first waiter for the key joins. When those nodes go down while
// the waiter waits (a queue that never empties keeps its nodes forever),
// the waiter must listen on nodes that answer again, not only hear of the
// releases by its timed retry (R10). Before, the waiter kept its dead
// nodes, and took the lock on its timed retry (here every second), up to
// a second after each release, instead of at once.
func TestHandoffListensAgainWhenItsNodesDie(t *testing.T) { // R10, R14
	for _, tt := range []struct {
		name       string
		fail, mend func(*redlocktest.MemNode)
	}{
		{"down", func(m *redlocktest.MemNode) { m.SetDown(true) }, func(m *redlocktest.MemNode) { m.SetDown(false) }},
		{"frozen", (*redlocktest.MemNode).Freeze, (*redlocktest.MemNode).Thaw},
	} {
		t.Run(tt.name, func(t *testing.T) { listensAgain(t, tt.fail, tt.mend) })
	}
}

func listensAgain(t *testing.T, fail, mend func(*redlocktest.MemNode)) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := slowMemNodes(5, 100*time.Microsecond)
		holder := memClient(t, nodes, redlock.WithTTL(time.Minute))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		for _, key := range []string{"a", "b", "c", "d", "e"} {
			// A new waiter for each key: nodes that failed under an
			// earlier key and timed out one of its attempts would be
			// on probation in it for a ttl (timeout.go), and its
			// attempt that overtakes the release on a node (below)
			// would wait for them as slow, up to ttl/2 - drift (29.4
			// s here; 4 of 1500 runs with -race on 2026-12-05).
			waiter := memClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithRetryDelay(time.Second, time.Second))
			l, err := holder.TryLock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan time.Time, 1)
			go func() {
				l2, err := waiter.Lock(ctx, key)
				if err != nil {
					t.Error(err)
					got <- time.Time{}
					return
				}
				got <- time.Now()
				_ = l2.Unlock(context.WithoutCancel(ctx))
			}()
			time.Sleep(50 * time.Millisecond) // the waiter queues and listens
			synctest.Wait()
			var dead []*redlocktest.MemNode
			for _, m := range mems {
				if m.Watchers("dlm:lock:"+key) > 0 {
					dead = append(dead, m)
				}
			}
			if len(dead) != redlock.HandoffWatchNodes {
				t.Fatalf("%s: the waiter listens on %d nodes, want %d", key, len(dead), redlock.HandoffWatchNodes)
			}
			for _, m := range dead {
				fail(m)
			}
			time.Sleep(5 * time.Second) // the waiter's timed retries find them down
			start := time.Now()
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			at := <-got
			// At once: a round trip, or, when the waiter's attempt
			// overtook the release on a node, the node timeout (the
			// nodes that fail answer nothing) and a rank slot.
			if d := at.Sub(start); d > 200*time.Millisecond {
				t.Errorf("%s: the waiter took the lock %v after its release, want at once (it listens on nodes that are down)", key, d)
			}
			for _, m := range dead {
				mend(m)
			}
		}
	})
}
