package redisproc_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/redisproc"
)

// A cluster of 3 masters with a replica each covers every slot, routes a
// key to the master of its slot, and a promoted replica serves its
// master's slots with what it had replicated. Every process starts with
// its own config epoch, so that Redis never resolves a collision of
// epochs (which goes on after the cluster is up, and could leave a
// replica with its master's epoch), and the promoted replica claims its
// master's slots with an epoch above the master's.
func TestStartClusterWithReplicasAndPromote(t *testing.T) {
	requireRedis(t)
	ctx := t.Context()
	cfg := redisproc.ClusterConfig{Masters: 3, Replicas: 1, ReplicaNoFailover: true}
	cfg.Server.Args = []string{"--loglevel", "verbose"} // a collision is logged at verbose
	c, err := redisproc.StartCluster(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := len(c.Processes()); got != 6 {
		t.Fatalf("processes = %d, want 6", got)
	}
	myEpoch := func(p *redisproc.Process) int {
		t.Helper()
		info, err := p.Client().Do(ctx, "CLUSTER", "INFO").Text()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_my_epoch:"); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatalf("no cluster_my_epoch in %s's CLUSTER INFO", p.Addr())
		return 0
	}
	var epochs []int
	for _, m := range c.Masters() {
		epochs = append(epochs, myEpoch(m))
	}
	if sorted := slices.Compact(slices.Sorted(slices.Values(epochs))); len(sorted) != len(epochs) || sorted[0] == 0 {
		t.Errorf("the masters' config epochs are %v, want distinct and set", epochs)
	}
	for _, p := range c.Processes() {
		for _, line := range strings.Split(p.Log(), "\n") {
			if strings.Contains(line, "configEpoch collision") {
				t.Errorf("%s resolved a collision of config epochs after the cluster was made: %s", p.Addr(), line)
			}
		}
	}
	if u := c.URL(); !strings.Contains(u, "cluster=true") || strings.Count(u, "addr=") != 2 {
		t.Fatalf("URL = %q, want the seed and two addr parameters", u)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer cc.Close()
	for _, k := range []string{"a", "b", "c", "{x}1", "{x}2"} {
		if err := cc.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s through the cluster: %v", k, err)
		}
	}
	slot, err := c.Masters()[0].Client().Do(ctx, "CLUSTER", "KEYSLOT", "a").Int()
	if err != nil {
		t.Fatal(err)
	}
	m := c.MasterOf(slot)
	if v, err := c.Masters()[m].Client().Get(ctx, "a").Result(); err != nil || v != "v" {
		t.Fatalf("GET a on master %d (slot %d) = %q, %v; want v", m, slot, v, err)
	}
	if n, err := c.Masters()[m].Client().Do(ctx, "WAIT", 1, 10000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on master %d = %d, %v; want the replica's acknowledgement", m, n, err)
	}
	before := myEpoch(c.Masters()[m])
	if err := c.Promote(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := myEpoch(c.Replicas(m)[0]); got <= before {
		t.Errorf("the promoted replica's config epoch is %d, want above its old master's %d", got, before)
	}
	if v, err := c.Replicas(m)[0].Client().Get(ctx, "a").Result(); err != nil || v != "v" {
		t.Fatalf("GET a on the promoted replica = %q, %v; want v", v, err)
	}
	// The old master is a replica now: it must not promote itself
	// either when its new master fails.
	for _, p := range c.Processes() {
		if got, err := p.Client().ConfigGet(ctx, "cluster-replica-no-failover").Result(); err != nil || got["cluster-replica-no-failover"] != "yes" {
			t.Errorf("cluster-replica-no-failover on %s = %v, %v; want yes on every process", p.Addr(), got, err)
		}
	}
}

// MoveSlot migrates a slot and its keys to another master: the key is
// then on the new master, the old one redirects it, and a slot or a master
// out of range is refused.
func TestMoveSlot(t *testing.T) {
	requireRedis(t)
	ctx := t.Context()
	c, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	slot, err := c.Masters()[0].Client().Do(ctx, "CLUSTER", "KEYSLOT", "a").Int()
	if err != nil {
		t.Fatal(err)
	}
	from := c.MasterOf(slot)
	to := 1 - from
	if err := c.Masters()[from].Client().Set(ctx, "a", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.MoveSlot(ctx, slot, to); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Masters()[to].Client().Get(ctx, "a").Result(); err != nil || v != "v" {
		t.Fatalf("GET a on the slot's new master = %q, %v; want v", v, err)
	}
	if err := c.Masters()[from].Client().Get(ctx, "a").Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
		t.Fatalf("GET a on the slot's old master = %v; want MOVED", err)
	}
	for _, bad := range [][2]int{{-1, 0}, {redisproc.Slots, 0}, {slot, 2}} {
		if err := c.MoveSlot(ctx, bad[0], bad[1]); err == nil {
			t.Errorf("MoveSlot(%d, %d) = nil; want an error", bad[0], bad[1])
		}
	}
}

// Isolate cuts a master of a Partitionable cluster from the others, bus
// and replication: the other masters mark it failed and its replica loses
// its link, while clients still reach it on its own port and on the one
// the cluster announces; Rejoin heals it.
func TestIsolateCutsAMasterFromItsCluster(t *testing.T) {
	requireRedis(t)
	ctx := t.Context()
	c, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, ReplicaNoFailover: true,
		NodeTimeout: time.Second, Partitionable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := c.Masters()[0]
	id, err := m.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	// flags returns the flags others[i] gives m in CLUSTER NODES.
	flags := func(p *redisproc.Process) string {
		nodes, err := p.Client().Do(ctx, "CLUSTER", "NODES").Text()
		if err != nil {
			return err.Error()
		}
		for _, line := range strings.Split(nodes, "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[0] == id {
				return f[2]
			}
		}
		return "unknown"
	}
	linkUp := func() bool {
		info, err := c.Replicas(0)[0].Client().Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up") &&
			strings.Contains(info, "master_port:"+strconv.Itoa(c.AnnouncedPort(m)))
	}
	// The replica follows its master through the announced port.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("waited 30s for %s: flags of the master on the others %q, %q", what, flags(c.Masters()[1]), flags(c.Masters()[2]))
			}
			time.Sleep(20 * time.Millisecond) // polling interval, bounded by the deadline
		}
	}
	waitFor("the replica's link through the announced port", linkUp)
	// A key of the master's slots.
	key := ""
	for i := 0; key == ""; i++ {
		k := "k" + strconv.Itoa(i)
		if slot, err := m.Client().Do(ctx, "CLUSTER", "KEYSLOT", k).Int(); err != nil {
			t.Fatal(err)
		} else if c.MasterOf(slot) == 0 {
			key = k
		}
	}
	if err := c.Isolate(m); err != nil {
		t.Fatal(err)
	}
	// Nothing the master writes reaches the replica: no acknowledgement
	// passes the cut. (The master takes writes until it finds itself in
	// a minority, after the node timeout.)
	if err := m.Client().Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET on the cut master: %v", err)
	}
	if n, err := m.Client().Do(ctx, "WAIT", 1, 1000).Int(); err != nil || n != 0 {
		t.Fatalf("WAIT 1 on the cut master = %d, %v; want no replica's acknowledgement", n, err)
	}
	failed := func() bool {
		for _, o := range c.Masters()[1:] {
			if !slices.Contains(strings.Split(flags(o), ","), "fail") {
				return false
			}
		}
		return true
	}
	waitFor("the other masters to mark the cut master failed", failed)
	direct := m.Client().Ping(ctx).Err()
	announced := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(c.AnnouncedPort(m)), MaxRetries: -1})
	defer announced.Close()
	if err := errors.Join(direct, announced.Ping(ctx).Err()); err != nil {
		t.Fatalf("a client cannot reach the cut master: %v", err)
	}
	if err := c.Rejoin(m); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor("the others to clear the master's failure", func() bool {
		for _, o := range c.Masters()[1:] {
			if f := strings.Split(flags(o), ","); slices.Contains(f, "fail") || slices.Contains(f, "fail?") {
				return false
			}
		}
		return true
	})
	if n, err := m.Client().Do(ctx, "WAIT", 1, 30000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on the rejoined master = %d, %v; want the replica's acknowledgement", n, err)
	}
	var plain redisproc.Cluster // started without Partitionable
	if err := plain.Isolate(m); !errors.Is(err, redisproc.ErrNotPartitionable) {
		t.Errorf("Isolate on a cluster started without Partitionable = %v; want ErrNotPartitionable", err)
	}
}

// Once StartCluster returns, every node's map lists each replica as a
// replica of its master, even at a node timeout of a minute, when a node
// may hear from another only every few seconds: dlm doctor, reading the
// map of the first node to answer, once counted a replica as a master
// "with no replicas" (cmd/dlm's TestDoctorJudgesTheReplicasOfADownMaster,
// in a fresh-clone run).
func TestStartClusterReturnsOnceEveryNodeKnowsTheReplicas(t *testing.T) {
	requireRedis(t)
	ctx := t.Context()
	c, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, NodeTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	replicas := map[string]bool{}
	for i := range c.Masters() {
		for _, r := range c.Replicas(i) {
			id, err := r.Client().Do(ctx, "CLUSTER", "MYID").Text()
			if err != nil {
				t.Fatal(err)
			}
			replicas[id] = true
		}
	}
	for _, p := range c.Processes() {
		nodes, err := p.Client().Do(ctx, "CLUSTER", "NODES").Text()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) >= 3 && replicas[f[0]] && !strings.Contains(f[2], "slave") {
				t.Errorf("%s lists replica %s as %q once StartCluster returned: %s", p.Addr(), f[1], f[2], line)
			}
		}
	}
}
