package rueidis_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// A cluster node learns the address of a master's replica, and follows a
// failover at once: once the replica of a master that died took its
// slots, the node's requests for those slots reach it within a few
// seconds (the bound is generous for a loaded machine). Before the fix
// rueidis read the slot map only when a request failed or was redirected:
// a replica that synced after the first read (CLUSTER SLOTS lists a
// replica once it is online) stayed unknown, and once its master died the
// node knew no process that could tell it the new map.
func TestClusterNodeFollowsAFailover(t *testing.T) {
	cl := redlocktest.StartRedisCluster(t, 1, 1)
	n, err := rueidis.DialNode(cl.URL())
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

// knows reports whether n's rueidis cluster client knows addr.
func knows(n *rueidis.Node, addr string) bool {
	_, ok := n.Client().Nodes()[addr]
	return ok
}
