package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Over real servers and both adapters: one node refuses connections and
// another, connected, turns slow: its replies come slower than the node
// timeout's limit (a tenth of the ttl), through a proxy that delays them.
// A failed attempt that timed the slow node out releases its key there
// when the answer comes, however late (not a ttl later); a Lock is granted
// once the client waited for the slow node, and an extension is
// confirmed, the validity at most ttl - latency - drift.
func TestSlowNodeNeededForQuorumRedis(t *testing.T) {
	const ttl, slow = 2 * time.Second, 400 * time.Millisecond // limit 200ms; patience 978ms
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 2)
		refused := closedAddr(t)
		var delay atomic.Int64
		delayed := delayProxy(t, cl.Servers[1].Addr(), &delay)
		urls := []string{"redis://" + refused, cl.Servers[0].URL(), "redis://" + delayed}
		c := dialURLs(t, a, urls, redlock.WithTTL(ttl), redlock.WithNodeTimeout(50*time.Millisecond))
		lockUnlock(t, c, "slow", "every node fast")

		// A new client's first attempt, limit 400ms, answers in 600ms.
		delay.Store(int64(600 * time.Millisecond))
		if _, err := c.TryLock(t.Context(), "stale", redlock.WithTTL(4*time.Second)); err == nil {
			t.Fatal("TryLock granted, though the node the quorum needs answers after the limit")
		}
		redlocktest.Eventually(t, 3*time.Second, func() bool { return len(cl.Servers[1].MustKeys(redlock.DefaultKeyPrefix+"stale")) == 0 },
			"the failed attempt's key is still on the slow node 3s after it (its ttl is 4s)")

		delay.Store(int64(slow))
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		l, err := c.Lock(ctx, "slow")
		if err != nil {
			t.Fatalf("Lock with one node refusing and one answering in %v (ttl %v): %v", slow, ttl, err)
		}
		took := time.Since(start)
		t.Logf("granted after %v", took)
		if v := l.Validity(); v > ttl-slow-drift(ttl) {
			t.Errorf("validity %v, over ttl - the slow answer - drift = %v", v, ttl-slow-drift(ttl))
		}
		if err := l.Extend(t.Context()); err != nil {
			t.Errorf("Extend (the lock granted after %v): %v", took, err)
		}
		if err := l.Unlock(t.Context()); err != nil {
			t.Errorf("Unlock: %v", err)
		}
	})
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	return redlocktest.RefusingAddr(t)
}

// delayProxy is redlocktest.DelayProxy: a healthy server whose answers
// come delay late.
func delayProxy(t *testing.T, addr string, delay *atomic.Int64) string {
	t.Helper()
	return redlocktest.DelayProxy(t, addr, delay)
}
