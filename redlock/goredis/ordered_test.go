package goredis_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// adapter.AsyncNode's contract: requests started on one node are executed
// in the order Start was called, so a release never overtakes the
// acquisition it undoes; Unlock relies on it. A goredis Node over a client
// it cannot pipeline on (an OnConnect hook, a StreamingCredentialsProvider)
// runs each request on a goroutine of its own through go-redis' pool.
// Regression: nothing ordered them. Here node 2's first
// new connection is slow (its OnConnect takes 300 ms: a slow AUTH or
// CLIENT SETNAME), TryLock is decided by nodes 0 and 1, Unlock returns nil;
// before the fix the release overtook the acquisition on node 2, which then
// held the lock's key for the whole ttl.
func TestPooledNodeKeepsReleaseBehindAcquisition(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	var arm atomic.Bool
	slowDone := make(chan struct{}) // the slow connection is open
	nodes := make([]redlock.Node, len(cl.Servers))
	for i, s := range cl.Servers {
		o := &redis.Options{Addr: s.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true}
		if i == 2 {
			o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
				if arm.CompareAndSwap(true, false) {
					time.Sleep(300 * time.Millisecond)
					close(slowDone)
				}
				return nil
			}
			o.ConnMaxLifetime = time.Millisecond // every request on a new connection
		}
		rc := redis.NewClient(o)
		t.Cleanup(func() { _ = rc.Close() })
		nodes[i] = goredis.NewNode(rc, s.Addr())
	}
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(2*time.Second), redlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckNodes(t.Context()); err != nil {
		t.Logf("CheckNodes: %v", err)
	}
	time.Sleep(10 * time.Millisecond) // past ConnMaxLifetime: the facts' connection is not reused
	arm.Store(true)
	l, err := c.TryLock(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(t.Context()); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	// The acquisition runs on node 2 once its slow connection is open;
	// the key must not be there then, nor for a while after.
	select {
	case <-slowDone:
	case <-time.After(30 * time.Second):
		t.Fatal("node 2's slow connection never opened")
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if v, err := cl.Servers[2].Client().Get(t.Context(), redlock.DefaultKeyPrefix+"x").Result(); err == nil {
			ttl := cl.Servers[2].Client().PTTL(t.Context(), redlock.DefaultKeyPrefix+"x").Val()
			t.Fatalf("after Unlock returned nil, node 2 holds the lock's key (value of %d bytes, %v left): the release ran before the acquisition", len(v), ttl)
		}
	}
}
