package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// hungClusterNodes starts the nodes of the hung-master tests: two plain
// nodes and a cluster node of two masters (cluster-node-timeout 30 s, so
// that the cluster still serves the other master's slots while one hangs),
// the first of which evicts (maxmemory-policy allkeys-lru, a FAIL: it
// frees held locks). It returns the --nodes list, the evicting master and
// the other, which the caller hangs (SIGSTOP) when it is ready.
func hungClusterNodes(t *testing.T) (nodes string, evicting, hung *redisproc.Process) {
	t.Helper()
	c := redlocktest.Start(t, 2)
	redlocktest.Require(t)
	cl, err := redisproc.StartCluster(t.Context(), redisproc.ClusterConfig{Masters: 2, NodeTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	evicting, hung = cl.Masters()[0], cl.Masters()[1]
	if err := evicting.Client().ConfigSet(t.Context(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(append(c.URLs(), cl.URL()), ","), evicting, hung
}

// One master of a cluster node hung (SIGSTOP), the other evicting. dlm
// doctor must check the live master for every rule and FAIL on its
// eviction (exit 1), reporting the hung one unreachable; before, its
// probe asked CLUSTER INFO through go-redis' cluster client under one
// deadline, which the hung master used up: WARN "cluster not inspected",
// exit 0. dlm status shows the node up, served by its live master, and
// the hung master down on a line of its own. Nothing here is bounded in
// time but by the runs' own minute, so it runs in parallel; the bound of
// dlm lock over the same nodes is TestHungClusterMasterLockBound's, which
// runs serial.
func TestHungClusterMasterSeenPerMaster(t *testing.T) {
	t.Parallel()
	nodes, evicting, hung := hungClusterNodes(t)
	hung.Freeze()
	defer hung.Thaw()

	r := runDLM(t, time.Minute, nil, "doctor", "--nodes", nodes)
	out := r.stdout + r.stderr
	if r.code != exitFailure || !strings.Contains(out, "allkeys-lru") || !strings.Contains(out, hung.Addr()) {
		t.Errorf("dlm doctor, one master of the cluster node hung, the other evicting: exit %d after %v, want %d with the eviction FAIL of %s and %s named unreachable; output:\n%s",
			r.code, r.elapsed.Round(time.Millisecond), exitFailure, evicting.Addr(), hung.Addr(), out)
	}

	r = runDLM(t, time.Minute, nil, "status", "--nodes", nodes)
	line := func(prefix string) string {
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return l
			}
		}
		return ""
	}
	if l := line("cluster:"); !strings.Contains(l, " up ") {
		t.Errorf("dlm status: the cluster node's line %q, want it up (its other master serves); output:\n%s%s", l, r.stdout, r.stderr)
	}
	if l := line("master " + hung.Addr()); !strings.Contains(l, "down") {
		t.Errorf("dlm status: the hung master's line %q, want it down; output:\n%s%s", l, r.stdout, r.stderr)
	}
}

// TestHungClusterMasterLockBound: over the nodes of
// TestHungClusterMasterSeenPerMaster, dlm lock --wait 0 with one master of
// the cluster node hung ends within the bound docs/operations.md gives
// for a hung node (twenty node timeouts plus half a second, here with the
// healthy run's time and a second more for a loaded machine), over both
// adapters. Serial: its bound measures time.
func TestHungClusterMasterLockBound(t *testing.T) {
	nodes, _, hung := hungClusterNodes(t)
	healthy := runDLM(t, 30*time.Second, nil, "lock", "--nodes", nodes, "--wait", "0", "r", "--", "true")
	if healthy.code != 0 {
		t.Fatalf("dlm lock with every node up: exit %d; stderr: %s", healthy.code, healthy.stderr)
	}
	hung.Freeze()
	defer hung.Thaw()

	bound := time.Second + 500*time.Millisecond + healthy.elapsed + time.Second
	for _, adapt := range []string{"rueidis", "goredis"} {
		r := runDLM(t, 30*time.Second, nil, "lock", "--adapter", adapt, "--nodes", nodes, "--wait", "0", "r", "--", "true")
		t.Logf("dlm lock --adapter %s --wait 0: exit %d after %v", adapt, r.code, r.elapsed.Round(time.Millisecond))
		if r.code != 0 || r.elapsed > bound {
			t.Errorf("dlm lock --adapter %s --wait 0 r -- true with one master of the cluster node hung (the plain nodes grant): exit %d after %v, want 0 within %v; stderr: %s",
				adapt, r.code, r.elapsed.Round(time.Millisecond), bound.Round(time.Millisecond), r.stderr)
		}
	}
}
