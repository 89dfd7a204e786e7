package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// dlm doctor says FAIL for a cluster node's replica that may promote
// itself, also once that replica's master is down, which is when the
// replica is about to promote itself (a node timeout later) without its
// master's last locks. Before, doctor judged the replicas of the masters
// it reached only, and said WARN "master unreachable ... bring it back",
// exit 0.
func TestDoctorJudgesTheReplicasOfADownMaster(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	ctx := t.Context()
	cl, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, NodeTimeout: time.Minute,
		Server: redisproc.Config{Persistence: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	// Only the first master's replica may promote itself.
	for i := 1; i < 3; i++ {
		if err := cl.Replicas(i)[0].Client().ConfigSet(ctx, "cluster-replica-no-failover", "yes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	promotable := cl.Replicas(0)[0].Addr()
	r := runDLM(t, 30*time.Second, nil, "doctor", "--nodes", cl.URL())
	if r.code == 0 || !strings.Contains(r.stdout, promotable) {
		t.Fatalf("doctor with every master up: exit %d, want a FAIL naming replica %s:\n%s", r.code, promotable, r.stdout)
	}
	// Killed, as a crash. Stopped cleanly (SIGTERM: a master with
	// replicas first waits up to 10 s for them), it once left doctor
	// seeing the replica as a master within those seconds, in a
	// fresh-clone run beside two busy loops (node timeout a minute; how
	// the replica was promoted is not established).
	cl.Masters()[0].Kill()
	r = runDLM(t, 30*time.Second, nil, "doctor", "--nodes", cl.URL())
	if r.code == 0 || !strings.Contains(r.stdout, promotable) {
		t.Errorf("doctor with the promotable replica's master down (the replica promotes itself a node timeout later): exit %d, no word of replica %s:\n%s", r.code, promotable, r.stdout)
	}
}
