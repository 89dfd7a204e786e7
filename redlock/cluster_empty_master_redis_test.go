package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// A master that serves no slots is a normal state of a Redis Cluster: a
// master just added (redis-cli --cluster add-node, before a reshard) or
// one whose slots were moved away before it is removed. Client.Locks (dlm
// status --all) lists the locks held on the cluster node all the same.
// Before, the scan walked every master of CLUSTER NODES, and the cluster
// client, which knows only the masters of its slot map, failed it ("cluster
// master ... is not known to the client yet"), for as long as the empty
// master was there, on both adapters.
func TestLocksOverAClusterWithAnEmptyMaster(t *testing.T) {
	redlocktest.Require(t)
	ctx := t.Context()
	cl, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	p, err := redisproc.Start(ctx, redisproc.Config{Dir: t.TempDir(), Args: []string{"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if err := p.Client().Do(ctx, "CLUSTER", "MEET", "127.0.0.1", cl.Masters()[0].Port()).Err(); err != nil {
		t.Fatal(err)
	}
	// Every server knows the new, empty master.
	for joined := false; !joined; {
		joined = true
		for _, q := range append(cl.Processes(), p) {
			txt, err := q.Client().Do(ctx, "CLUSTER", "NODES").Text()
			if err != nil || strings.Count(txt, "master") < 3 || strings.Contains(txt, "handshake") {
				joined = false
			}
		}
		if !joined {
			time.Sleep(50 * time.Millisecond) // polling the cluster's view, bounded by the test's deadline
		}
	}
	for _, a := range adapters() {
		c := dialURLs(t, a, []string{cl.URL()})
		l, err := c.TryLock(ctx, "held")
		if err != nil {
			t.Fatalf("%s: TryLock: %v", a.name, err)
		}
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		infos, complete, err := c.Locks(lctx, 0)
		cancel()
		if !complete || err != nil || len(infos) != 1 {
			t.Errorf("%s: Locks over a cluster node with an empty master = %d lock(s), complete %v, %v; want the held lock", a.name, len(infos), complete, err)
		}
		_ = l.Unlock(ctx)
	}
}
