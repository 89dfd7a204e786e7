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
	// A replica syncs 1 s after it asks (5 s by default): long enough to
	// promote one that has not, short enough to wait for it.
	rc, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, ReplicaNoFailover: true,
		NodeTimeout: clusterNodeTimeout, StateTimeout: 15 * time.Second,
		Server: redisproc.Config{Args: []string{"--repl-diskless-sync-delay", "1"}}})
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
	if err := failoverByHand(ctx, rc, s, 0, t.Logf); err != nil {
		t.Fatal(err)
	}
	if err := migrateSlot(ctx, shards, key); err != nil {
		t.Fatal(err)
	}
	if owns, err := ownsSlot(ctx, s.master, slot); err != nil || !owns {
		t.Fatalf("master %d serves slot %d after the migration: %v, %v; want true", dst, slot, owns, err)
	}
	// The old master of the first failover, now s's replica, syncs with
	// its new master only after a while (repl-diskless-sync-delay); until
	// then it holds the data of its life as a master. A write made just
	// before the second failover must survive it.
	written := key + ":written-before-the-failover"
	if err := s.master.Client().Do(ctx, "SET", written, "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := failoverByHand(ctx, rc, s, 0, t.Logf); err != nil {
		t.Fatalf("failover of the master the slot moved to: %v", err)
	}
	if n, err := s.master.Client().Do(ctx, "EXISTS", written).Int(); err != nil || n != 1 {
		t.Errorf("the promoted replica %s has the key written on its master just before the failover: EXISTS %d, %v; want 1", s.master.Addr(), n, err)
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
		t.Fatalf("the promoted replica %s serves slot %d: %v, %v; want true; every process's CLUSTER NODES:\n%s", s.master.Addr(), slot, owns, err, everyClusterNodes(ctx, rc))
	}

	// A failover by hand completes over slots left open. Redis leaves a
	// slot importing, on a master no migration of the harness touches,
	// when the master restarts with keys of a slot another master owns;
	// a process importing a slot ignores every claim of it, so it never
	// saw the promoted replica take that slot, and the master's own open
	// slot kept its replica from ever looking caught up (random torture,
	// seeds 2931 and 2932). Here the open slots are made by hand: the
	// third master imports the slot from s's master, and s's master
	// imports a slot of the third master.
	thirdAt := 3 - dst - rc.MasterOf(slot) // neither the slot's first master nor s
	third := &shards[thirdAt]
	sID, err := s.master.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	thirdID, err := third.master.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	thirdSlot := 0
	for rc.MasterOf(thirdSlot) != thirdAt {
		thirdSlot++
	}
	if err := third.master.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", sID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.master.Client().Do(ctx, "CLUSTER", "SETSLOT", thirdSlot, "IMPORTING", thirdID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := failoverByHand(ctx, rc, s, 0, t.Logf); err != nil {
		t.Fatalf("failover with slots left open: %v; every process's CLUSTER NODES:\n%s", err, everyClusterNodes(ctx, rc))
	}
	if owns, err := ownsSlot(ctx, s.master, slot); err != nil || !owns {
		t.Errorf("the promoted replica %s serves slot %d: %v, %v; want true", s.master.Addr(), slot, owns, err)
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

// A replica has caught up with its master when it sees the master's slots
// and config epoch, whatever slot the master has open: CLUSTER NODES shows
// a slot being imported ("[6248-<-id]") or migrated ("[6248->-id]") only on
// the line of the process itself, never on another's view of it, so a
// master with an open slot was never seen caught up and its failover by
// hand gave up after 30 s (random torture, seed 2931).
func TestCaughtUpIgnoresOpenSlots(t *testing.T) {
	const (
		master = "4a1a1be125b7caf75a2465721a9d16a279c01d5c"
		other  = "d9826e0108330ca8dda44746f54d3c86bbe9a0a1"
		info   = "cluster_state:ok\r\ncluster_current_epoch:18\r\n"
	)
	replicaNodes := master + " 127.0.0.1:12122@22122 master - 0 1700000000000 18 connected 2121 5461-6247 6249-10921\n" +
		"5b2c 127.0.0.1:15081@25081 myself,slave " + master + " 0 1700000000000 18 connected\n"
	for _, tc := range []struct{ name, open string }{
		{"no open slot", ""},
		{"a slot being imported", " [6248-<-" + other + "]"},
		{"a slot being migrated", " [2121->-" + other + "]"},
		{"both", " [6248-<-" + other + "] [2121->-" + other + "]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			masterNodes := master + " 127.0.0.1:12122@22122 myself,master - 0 1700000000000 18 connected 2121 5461-6247 6249-10921" + tc.open + "\n" +
				other + " 127.0.0.1:13539@23539 master - 0 1700000000000 17 connected 0-2120 2122-5460 6248\n"
			m, ok := parseView(masterNodes, info, "")
			if !ok {
				t.Fatalf("parseView of the master's own line: not found")
			}
			r, ok := parseView(replicaNodes, info, master)
			if !ok {
				t.Fatalf("parseView of the replica's view of %s: not found", master)
			}
			if !caughtUp(m, r) {
				t.Errorf("caughtUp(master %+v, replica's view %+v) = false; want true", m, r)
			}
		})
	}
}

// A replica is in sync with its master once its link is up and its offset
// reached the master's; an old master that rejoined as a replica reports
// its link down, with offset 0, until its first sync.
func TestInSync(t *testing.T) {
	master := "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nmaster_repl_offset:121\r\n"
	for _, tc := range []struct {
		name, replica string
		want          bool
	}{
		{"not synced yet", "role:slave\r\nmaster_link_status:down\r\nslave_repl_offset:0\r\nmaster_repl_offset:0\r\n", false},
		{"link up, behind", "role:slave\r\nmaster_link_status:up\r\nslave_repl_offset:107\r\n", false},
		{"link up, at the master's offset", "role:slave\r\nmaster_link_status:up\r\nslave_repl_offset:121\r\n", true},
		{"link up, past it", "role:slave\r\nmaster_link_status:up\r\nslave_repl_offset:135\r\n", true},
		{"link down again", "role:slave\r\nmaster_link_status:down\r\nslave_repl_offset:135\r\n", false},
		{"no replication section", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inSync(master, tc.replica); got != tc.want {
				t.Errorf("inSync(master offset 121, %q) = %v; want %v", tc.replica, got, tc.want)
			}
		})
	}
}
