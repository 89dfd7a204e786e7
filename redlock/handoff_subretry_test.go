package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// subFailNode is a MemNode whose first subscriptions fail: opening the
// release watch (WatchReleases) or subscribing a key on it (Watch) fails
// as often as its counters say, as a SUBSCRIBE does over a connection that
// is still being made or has just broken.
type subFailNode struct {
	*redlocktest.MemNode
	openFails, watchFails *atomic.Int32
}

var errSubscribe = errors.New("subscribe failed (test)")

func (n subFailNode) WatchReleases(notify func(key, value string)) (adapter.ReleaseWatch, error) {
	if n.openFails.Add(-1) >= 0 {
		return nil, errSubscribe
	}
	w, err := n.MemNode.WatchReleases(notify)
	if err != nil {
		return nil, err
	}
	return subFailWatch{w, n.watchFails}, nil
}

type subFailWatch struct {
	adapter.ReleaseWatch
	fails *atomic.Int32
}

func (w subFailWatch) Watch(ctx context.Context, key string) error {
	if w.fails.Add(-1) >= 0 {
		return errSubscribe
	}
	return w.ReleaseWatch.Watch(ctx, key)
}

// TestHandoffRetriesAFailedSubscribe: a waiter whose subscriptions to the
// key's releases failed up to three times on every node it listens on
// (the watch could not be opened, or the SUBSCRIBE failed) still hears the
// holder's release and takes the lock at once, not on its timed retry a
// minute later. A failed subscription was never tried again: "the waiter
// took the lock 55.0002s after its release".
func TestHandoffRetriesAFailedSubscribe(t *testing.T) { // R10, R14
	for _, tt := range []struct {
		name              string
		openFails, watchF int32
	}{
		{"watch not opened", 1, 0},
		{"subscribe failed", 0, 1},
		{"watch not opened, then subscribe failed", 1, 1},
		{"subscribe failed three times", 0, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := slowMemNodes(5, 100*time.Microsecond)
				holder := memClient(t, nodes, redlock.WithTTL(10*time.Minute))
				flaky := make([]redlock.Node, len(mems))
				for i, m := range mems {
					var o, w atomic.Int32
					o.Store(tt.openFails)
					w.Store(tt.watchF)
					flaky[i] = subFailNode{m, &o, &w}
				}
				waiter := memClient(t, flaky, redlock.WithTTL(10*time.Minute), redlock.WithRetryDelay(time.Minute, time.Minute))
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
				defer cancel()
				l, err := holder.TryLock(ctx, "r")
				if err != nil {
					t.Fatal(err)
				}
				got := make(chan time.Time, 1)
				go func() {
					l2, err := waiter.Lock(ctx, "r")
					if err != nil {
						t.Error(err)
						got <- time.Time{}
						return
					}
					got <- time.Now()
					_ = l2.Unlock(context.WithoutCancel(ctx))
				}()
				time.Sleep(5 * time.Second) // the waiter failed, and subscribed (or tried to)
				synctest.Wait()
				start := time.Now()
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				at := <-got
				if d := at.Sub(start); d > time.Second {
					t.Errorf("the waiter took the lock %v after its release, want at once (its subscriptions failed once and were not tried again)", d)
				}
			})
		})
	}
}
