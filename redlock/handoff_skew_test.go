package redlock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// The class of TestHandoffFirstRankRetriesAfterARace: a release reaches
// the nodes at different times (a busy node, a slow link), and a waiter
// of another client, woken by the first announcement, attempts while the
// release is still on its way to the others. However late each node
// applies the release, the waiter must take the lock soon after the last
// one did, never after its timed retry (a minute here). A timing
// adversary draws each node's lateness at random, up to many round
// trips, for 3 and 5 nodes (a client listens on 2 of them).
func TestHandoffReleaseSkewNeverStrandsAWaiter(t *testing.T) { // R10, R14
	for _, n := range []int{3, 5} {
		for seed := range uint64(40) {
			t.Run(fmt.Sprintf("nodes=%d/seed=%d", n, seed), func(t *testing.T) {
				releaseSkew(t, n, seed)
			})
		}
	}
}

func releaseSkew(t *testing.T, n int, seed uint64) {
	synctest.Test(t, func(t *testing.T) {
		const rtt = time.Millisecond
		rng := rand.New(rand.NewPCG(seed, uint64(n)))
		_, mems := redlocktest.NewMemNodes(n)
		late := make([]*atomic.Int64, n)
		nodes := make([]redlock.Node, n)
		for i, m := range mems {
			m.SetSlow(rtt)
			late[i] = &atomic.Int64{}
			nodes[i] = newLateRelease(m, late[i], nil)
		}
		holder := memClient(t, nodes, redlock.WithTTL(time.Minute))
		waiter := memClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithRetryDelay(time.Minute, time.Minute))
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		l, err := holder.TryLock(ctx, "skew")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			l2, err := waiter.Lock(ctx, "skew")
			if err == nil {
				err = l2.Unlock(context.WithoutCancel(ctx))
			}
			got <- err
		}()
		time.Sleep(50 * rtt) // the waiter fails once, queues and listens
		synctest.Wait()
		var last time.Duration
		for i := range late {
			d := time.Duration(rng.IntN(100)) * rtt / 2 // 0 to 50 round trips
			late[i].Store(int64(d))
			last = max(last, d)
		}
		start := time.Now()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(last + time.Second):
			t.Fatalf("the waiter did not get the lock within a second of the last node's release (%v after Unlock; lateness %v); its timed retry is a minute away", last, lateness(late))
		}
		t.Logf("granted %v after Unlock, the last node released %v after", time.Since(start), last)
	})
}

func lateness(late []*atomic.Int64) []time.Duration {
	out := make([]time.Duration, len(late))
	for i, l := range late {
		out[i] = time.Duration(l.Load())
	}
	return out
}
