package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// One master of a Redis Cluster node hung (SIGSTOP: it accepts
// connections and never answers), cluster-node-timeout 30 s so that the
// cluster keeps serving the other master's slots: the node must behave
// as one whose hung master's slots alone are unavailable. A client that
// locked before the hang locks a resource on the live master, needing
// the cluster node for its quorum (the second plain node is stopped),
// without waiting for the hung master, each time its facts readings are
// older than 2 s; before, each such lock waited for the node's facts
// reading as one (four node timeouts, 2 s here). And a fresh client
// dials at once, the hung master being the URL's first address (before,
// New waited 2 s for the node's replicas, asked of one server). Both
// adapters, one cluster.
func TestHungClusterMasterDelaysNoLock(t *testing.T) {
	c := redlocktest.Start(t, 2)
	redlocktest.Require(t)
	cl, err := redisproc.StartCluster(t.Context(), redisproc.ClusterConfig{Masters: 2, NodeTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	hung := cl.Masters()[0]
	var res string
	for i := 0; res == ""; i++ {
		r := fmt.Sprintf("live%d", i)
		slot, err := hung.Client().Do(t.Context(), "CLUSTER", "KEYSLOT", r).Int()
		if err != nil {
			t.Fatal(err)
		}
		if cl.MasterOf(slot) == 1 {
			res = r
		}
	}
	urls := append(c.URLs(), cl.URL())
	clients := map[string]*redlock.Client{}
	for _, a := range adapters() {
		cli := dialURLs(t, a, urls, redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithTTL(10*time.Second))
		for range 2 { // every node's facts read
			l, err := cli.Lock(t.Context(), res)
			if err != nil {
				t.Fatalf("%s: Lock with every node up = %v", a.name, err)
			}
			_ = l.Unlock(t.Context())
		}
		clients[a.name] = cli
	}
	c.Servers[1].Stop() // the cluster node is needed for every quorum
	hung.Freeze()
	defer hung.Thaw()
	dials := map[string]time.Duration{}
	for _, a := range adapters() {
		start := time.Now()
		cli, err := a.dial(urls, redlock.WithNodeTimeout(500*time.Millisecond))
		dials[a.name] = time.Since(start)
		if err != nil {
			t.Fatalf("%s.Dial = %v", a.name, err)
		}
		go func() { _ = cli.Close() }() // Close over a hung master is not this test's
	}
	// Every facts reading older than 2 s, as for a client that locks
	// now and then.
	time.Sleep(2500 * time.Millisecond)
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		t.Logf("a fresh client's Dial took %v", dials[a.name].Round(time.Millisecond))
		if dials[a.name] > 1500*time.Millisecond {
			t.Errorf("with one master of the cluster node hung: Dial took %v, want it under 1.5s", dials[a.name].Round(time.Millisecond))
		}
		start := time.Now()
		l, err := clients[a.name].TryLock(context.Background(), res)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("TryLock of %s (its slot on the live master) = %v after %v", res, err, took)
		}
		_ = l.Unlock(context.Background())
		t.Logf("TryLock %v", took.Round(time.Millisecond))
		// Generous for a loaded machine: the defect cost 2 s.
		if took > 1500*time.Millisecond {
			t.Errorf("with one master of the cluster node hung: a TryLock of a resource on the live master took %v, want it under 1.5s", took.Round(time.Millisecond))
		}
	})
}
