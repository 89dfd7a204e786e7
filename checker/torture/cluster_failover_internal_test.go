package torture

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redisproc"
)

// A master failed over by hand right after a slot moved to it settles:
// the harness waits until the master's replica has heard of the move
// (replicaCaughtUp) before it kills the master. A master that already
// holds the cluster's highest config epoch takes a slot without raising
// it, and its replica hears of the slot only with the master's next ping
// (it lagged 20-72 ms here); killed in that window, the master's replica
// was promoted without the slot, and the old master came back a master
// (the failovers of the random torture that did not settle within 30 s).
func TestFailoverRightAfterASlotMove(t *testing.T) {
	if !redisproc.Available() && os.Getenv("CI") == "" && os.Getenv("DLM_REQUIRE_REDIS") == "" {
		t.Skipf("SKIPPED, cannot run here: %v", redisproc.ErrNotFound)
	}
	ctx := context.Background()
	rc, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, ReplicaNoFailover: true,
		NodeTimeout: clusterNodeTimeout, StateTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	var shards []shard
	for i, m := range rc.Masters() {
		shards = append(shards, shard{master: m, replica: rc.Replicas(i)[0]})
	}
	key := redlock.HashTaggedKey(redlock.DefaultKeyPrefix, "r")
	slot, err := rc.Masters()[0].Client().Do(ctx, "CLUSTER", "KEYSLOT", key).Int()
	if err != nil {
		t.Fatal(err)
	}
	// migrateSlot moves the slot to the first other master.
	dst := 0
	if rc.MasterOf(slot) == 0 {
		dst = 1
	}
	s := &shards[dst]
	// A first failover: the old master comes back a replica, from its
	// nodes.conf.
	if err := failoverByHand(ctx, rc, s, 0); err != nil {
		t.Fatal(err)
	}
	if err := migrateSlot(ctx, shards, key); err != nil {
		t.Fatal(err)
	}
	if owns, err := ownsSlot(ctx, s.master, slot); err != nil || !owns {
		t.Fatalf("master %d serves slot %d after the migration: %v, %v; want true", dst, slot, owns, err)
	}
	if err := failoverByHand(ctx, rc, s, 0); err != nil {
		t.Fatalf("failover of the master the slot moved to: %v", err)
	}
	// The promoted replica claims the slot as it takes over; the wait
	// (10 s at most) only gives a starved machine time to show it.
	var owns bool
	for deadline := time.Now().Add(10 * time.Second); ; sleep(ctx, 100*time.Millisecond) {
		owns, err = ownsSlot(ctx, s.master, slot)
		if (err == nil && owns) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !owns {
		t.Errorf("the promoted replica %s serves slot %d: %v, %v; want true; every process's CLUSTER NODES:\n%s", s.master.Addr(), slot, owns, err, everyClusterNodes(ctx, rc))
	}
}

// everyClusterNodes is what every process of rc says in CLUSTER NODES, for a
// failure's message.
func everyClusterNodes(ctx context.Context, rc *redisproc.Cluster) string {
	var b strings.Builder
	for _, p := range rc.Processes() {
		nodes, err := p.Client().Do(ctx, "CLUSTER", "NODES").Text()
		fmt.Fprintf(&b, "%s (%v):\n%s\n", p.Addr(), err, nodes)
	}
	return b.String()
}
