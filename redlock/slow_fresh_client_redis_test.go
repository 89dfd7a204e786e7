package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestFreshClientReachesSlowNodesRedis: a client made while two of its
// three nodes answer every request late, past the limit (a loaded machine,
// a slow link; every dlm command is such a client) gets its lock in one
// try, as a client that saw the nodes turn slow does: its first attempt
// gives nodes it has no history of a grant's patience (ttl/2 - drift), and
// the adapters' connection set-up is bounded by that patience, not by a
// second of their own (a round trip of 1.1 s once never connected), nor by
// the shorter reading of the nodes' facts that may have started it
// (rueidis shares one set-up among the requests that need it: its first
// try failed 3 of 24 runs here so, "timed out after 2.25s").
func TestFreshClientReachesSlowNodesRedis(t *testing.T) {
	// limit 1s; patience 4.898s; a new connection's set-up and first
	// request take two round trips.
	const ttl, slow = 10 * time.Second, 1100 * time.Millisecond
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		urls := cl.URLs()
		var delay atomic.Int64
		delay.Store(int64(slow))
		for i := 1; i < 3; i++ {
			urls[i] = "redis://" + delayProxy(t, cl.Servers[i].Addr(), &delay)
		}
		c := dialURLs(t, a, urls, redlock.WithTTL(ttl), redlock.WithNodeTimeout(50*time.Millisecond))
		start := time.Now()
		l, err := c.TryLock(t.Context(), "fresh")
		if err != nil {
			t.Fatalf("a fresh client over two of three nodes answering %v late (ttl %v: a grant waits up to ttl/2 - drift): TryLock = %v after %v",
				slow, ttl, err, time.Since(start).Round(time.Millisecond))
		}
		t.Logf("granted after %v", time.Since(start).Round(time.Millisecond))
		if err := l.Unlock(context.WithoutCancel(t.Context())); err != nil {
			t.Errorf("Unlock: %v", err)
		}
	})
}
