package goredis_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// A cluster node learns the address of a master's replica, and follows a
// failover at once: once the replica of a master that died took its
// slots, the node's requests for those slots reach it within a few
// seconds (the bound is generous for a loaded machine; the node reloads
// the slot map on the failed requests). Before the fix go-redis reloaded
// its slot map only on MOVED or ASK, or every 60 s: a replica that synced
// after the first load (CLUSTER SLOTS lists a replica once it is online)
// stayed unknown, and a dead master's requests failed until then.
func TestClusterNodeFollowsAFailover(t *testing.T) {
	cl := redlocktest.StartRedisCluster(t, 1, 1)
	n, err := goredis.DialNode(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	ctx := t.Context()
	if ok, err := n.Acquire(ctx, "{before}", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire before the failover = %v, %v; want true", ok, err)
	}
	// The replica joined the slot map once it synced: the node learns its
	// address while the master is up, or it could not reach it after.
	replica := cl.Replicas(0)[0].Addr()
	for end := time.Now().Add(30 * time.Second); !knows(n, replica); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the node did not learn the address of the master's replica %s in 30 s", replica)
		}
	}
	cl.Masters()[0].Kill()
	// A request to the dead master: the node learns of the failure.
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	_, _ = n.Acquire(rctx, "{during}", "v", time.Minute)
	cancel()
	if err := cl.Promote(ctx, 0); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	const bound = 10 * time.Second
	for {
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		ok, err := n.Acquire(rctx, "{after}", "v", time.Minute)
		cancel()
		if ok && err == nil {
			t.Logf("followed the failover %v after the promotion", time.Since(promoted).Round(time.Millisecond))
			return
		}
		if time.Since(promoted) > bound {
			t.Fatalf("the node still fails %v after the replica's promotion: %v, %v; want it to follow the failover", bound, ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// knows reports whether n's go-redis cluster client has addr in its slot
// map.
func knows(n *goredis.Node, addr string) bool {
	var mu sync.Mutex
	found := false
	_ = n.Client().(*redis.ClusterClient).ForEachShard(context.Background(), func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		found = found || c.Options().Addr == addr
		return nil
	})
	return found
}

// A cluster node over a ClusterClient of the caller's own (which reads the
// slot map every minute by default) still learns, while it is used, a
// replica that synced after the client's first read, so that a failover
// finds it.
func TestClusterNodeOfACallersClientLearnsReplicas(t *testing.T) {
	cl := redlocktest.StartRedisCluster(t, 1, 1)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	n := goredis.NewNode(cc, "cluster")
	t.Cleanup(func() { _ = n.Close() })
	ctx := t.Context()
	replica := cl.Replicas(0)[0].Addr()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := n.Acquire(ctx, "{used}", "v", time.Minute); err != nil {
			t.Fatal(err)
		}
		// SlaveForKey reads go-redis' slot map as it is (no new read).
		if c, err := cc.SlaveForKey(ctx, "{used}"); err == nil && c.Options().Addr == replica {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the node's client did not learn the address of the master's replica %s in 30 s of use", replica)
		}
	}
}
