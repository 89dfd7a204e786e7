package redisproc_test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/redisproc"
)

// A cluster of 3 masters with a replica each covers every slot, routes a
// key to the master of its slot, and a promoted replica serves its
// master's slots with what it had replicated.
func TestStartClusterWithReplicasAndPromote(t *testing.T) {
	requireRedis(t)
	ctx := t.Context()
	c, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, ReplicaNoFailover: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := len(c.Processes()); got != 6 {
		t.Fatalf("processes = %d, want 6", got)
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
	if err := c.Promote(ctx, m); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Replicas(m)[0].Client().Get(ctx, "a").Result(); err != nil || v != "v" {
		t.Fatalf("GET a on the promoted replica = %q, %v; want v", v, err)
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
