package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// What a server of a cluster says of itself: its config epoch and the
// slots it serves, ranges and single slots, slots under migration left
// out; and two masters serving one slot are a FAIL naming the one with
// the lower epoch.
func TestClusterClaims(t *testing.T) {
	old := "a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460 [5461->-b2]\n" +
		"b2 127.0.0.1:7002@17002 master - 0 0 2 connected 5461-10922\n"
	c, ok := myselfClaim(old)
	if !ok || !c.Master || c.Epoch != 1 || len(c.Slots) != 1 || c.Slots[0] != [2]int{0, 5460} {
		t.Fatalf("myselfClaim = %+v, %v; want master, epoch 1, slots 0-5460", c, ok)
	}
	promoted := "c3 127.0.0.1:7004@17004 myself,master - 0 0 7 connected 0-5460 16000\n"
	replica := "d4 127.0.0.1:7005@17005 myself,slave c3 0 0 7 connected\n"
	claims := map[string]slotClaim{}
	for addr, txt := range map[string]string{"127.0.0.1:7001": old, "127.0.0.1:7004": promoted, "127.0.0.1:7005": replica} {
		claims[addr], _ = myselfClaim(txt)
	}
	fs := claimFindings(claims)
	if len(fs) != 1 || fs[0].Sev != sevFail || fs[0].Node != "127.0.0.1:7001" || !strings.Contains(fs[0].What, "127.0.0.1:7004") {
		t.Errorf("claimFindings = %+v; want one FAIL on the old master 127.0.0.1:7001 naming 127.0.0.1:7004", fs)
	}
	delete(claims, "127.0.0.1:7004")
	if fs := claimFindings(claims); len(fs) != 0 {
		t.Errorf("claimFindings without a second master of the slots = %+v; want none", fs)
	}
}

// An old cluster master restarted while it cannot reach its cluster's bus
// (its replica promoted in its place by hand) believes it still serves its
// slots and grants locks there beside the promoted replica (two holders,
// both adapters: reviewer atk10's finding 1). dlm doctor says FAIL,
// whichever server it is seeded at (the old master's stale map, or the
// cluster's). Before, it exited 0.
func TestDoctorFindsAnOldMasterBesideThePromotedReplica(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	ctx := t.Context()
	cl, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, ReplicaNoFailover: true,
		Partitionable: true, NodeTimeout: 20 * time.Second, Server: redisproc.Config{Persistence: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	m0 := cl.Masters()[0]
	m0.Stop()
	if err := cl.Promote(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := cl.Isolate(m0); err != nil {
		t.Fatal(err)
	}
	if err := m0.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	redlocktest.Eventually(t, 20*time.Second, func() bool {
		txt, err := m0.Client().ClusterNodes(ctx).Result()
		c, ok := myselfClaim(txt)
		return err == nil && ok && c.Master && len(c.Slots) > 0
	}, "the restarted old master says it serves its slots")
	for _, seed := range []string{m0.Addr(), cl.Masters()[1].Addr()} {
		r := runDLM(t, 60*time.Second, nil, "doctor", "--nodes", "redis://"+seed+"?cluster=true")
		if r.code == 0 || !strings.Contains(r.stdout, "old master back beside the replica promoted") {
			t.Errorf("doctor seeded at %s with the old master %s back beside its promoted replica: exit %d, want a FAIL naming it:\n%s", seed, m0.Addr(), r.code, r.stdout)
		}
	}
}
