package goredis_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// TestClusterFailover: a cluster node learns a master's replica and
// follows a failover to it (redlocktest.RunClusterFailover). Before the
// fix go-redis reloaded its slot map only on MOVED or ASK, or every 60 s.
func TestClusterFailover(t *testing.T) {
	redlocktest.RunClusterFailover(t, func(url string) (adapter.HandoffNode, error) {
		return goredis.DialNode(url)
	}, func(n adapter.HandoffNode, addr string) bool { return knows(n.(*goredis.Node), addr) })
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

// TestClusterFailoverPastACutMaster: a cluster node follows a failover
// made while the old master, cut from its cluster, still answers
// (redlocktest.RunClusterFailoverPastACutMaster).
func TestClusterFailoverPastACutMaster(t *testing.T) {
	redlocktest.RunClusterFailoverPastACutMaster(t, func(url string) (adapter.HandoffNode, error) {
		return goredis.DialNode(url)
	})
}

// TestClusterFailoverOfAFrozenMaster: a cluster node follows the failover
// of a master that hangs (redlocktest.RunClusterFailoverOfAFrozenMaster)
// on its requests' timeouts.
func TestClusterFailoverOfAFrozenMaster(t *testing.T) {
	redlocktest.RunClusterFailoverOfAFrozenMaster(t, func(url string) (adapter.HandoffNode, error) {
		return goredis.DialNode(url)
	}, func(n adapter.HandoffNode, addr string) bool { return knows(n.(*goredis.Node), addr) })
}

// TestClusterOldMasterBack: a cluster node is not granted a lock by a
// master that comes back with its old slot map after its replica took its
// slots (redlocktest.RunClusterOldMasterBack).
func TestClusterOldMasterBack(t *testing.T) {
	t.Parallel()
	redlocktest.RunClusterOldMasterBack(t, func(url string) (adapter.HandoffNode, error) {
		return goredis.DialNode(url)
	})
}
