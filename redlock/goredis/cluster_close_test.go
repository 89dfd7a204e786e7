package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// A cluster node over a ClusterClient of the caller's own, one of whose
// masters hangs (SIGSTOP), closes at once: the node's Close closes what
// the node made (its connections to the masters, its readings of the
// slot map) and does not wait for a request on the caller's client, which
// only its owner's Close or the request's deadline ends. Before, the
// node's reading of the slot map went over the caller's client, whose
// request to the frozen master ended only at its deadline, and Close
// waited for it (up to 2 s).
func TestCloseOfACallersClusterClientDoesNotWaitForAFrozenMaster(t *testing.T) {
	plain := redlocktest.Start(t, 2)
	cl := redlocktest.StartRedisCluster(t, 2, 0)
	// The caller's client, as a user makes one: go-redis' defaults, its
	// reads bounded at 3 s.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	ctx := t.Context()
	// The client has read its slot map while every master answered.
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	frozen := cl.Masters()[0]
	frozen.Freeze()
	t.Cleanup(frozen.Thaw)
	before := goleak.IgnoreCurrent()
	nodes := []redlock.Node{goredis.NewNode(cc, "cluster")}
	for _, u := range plain.URLs() {
		n, err := goredis.DialNode(u)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	c, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	// Every resource's slot, so that some of the requests go to the
	// frozen master, and the node reads the slot map again after they
	// failed.
	for _, r := range []string{"a", "b", "c", "d"} {
		l, err := c.TryLock(ctx, r)
		if err != nil {
			t.Fatalf("TryLock(%s) with the two plain nodes healthy = %v", r, err)
		}
		if err := l.Unlock(context.WithoutCancel(ctx)); err != nil {
			t.Fatalf("Unlock(%s): %v", r, err)
		}
	}
	start := time.Now()
	_ = c.Close()
	took := time.Since(start)
	t.Logf("Close took %v", took.Round(time.Millisecond))
	// Generous: the releases of the client's last requests may wait up
	// to their node timeout's limit (a second at the defaults).
	if took > 1500*time.Millisecond {
		t.Errorf("Close took %v with a master of the caller's cluster client frozen, want it not to wait for requests to it", took.Round(time.Millisecond))
	}
	// The goroutines of the node's own requests end with Close; those
	// of the caller's client are its own (cc's pool, its reading of the
	// slot map), ended by its owner's Close.
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines left after Close with a master of the caller's cluster client frozen: %v", err)
	}
}
