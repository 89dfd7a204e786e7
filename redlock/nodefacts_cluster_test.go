package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// clusterFactsPerMaster checks, over the cluster nodes urls (cs, of two
// masters each, fresh clients), that the facts of a node that is a Redis
// Cluster are each master's, read on each master's connection: every
// master is listed with its run id, the max ttl advertised on the clusters
// refuses a longer lock without CheckNodes, a master given again as a
// plain node is one server twice, and fencing warns of each master that
// does not sync every write. Both adapters. TestClusterNodesEveryCapability
// runs it on its clusters (a cluster takes seconds to start).
func clusterFactsPerMaster(t *testing.T, urls []string, cs []*redlocktest.RedisCluster) {
	// Every cluster node advertises the max ttl: one that did alone would
	// be counted as a failed node, and the others a quorum.
	for _, cl := range cs {
		if err := cl.Client().Set(t.Context(), adapter.MaxTTLKey, "40s", 0).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Client().Del(t.Context(), adapter.MaxTTLKey).Err() })
	}
	masters := cs[0].Addrs()[:2]
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		c := dialURLs(t, a, urls, redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithFencing())
		if _, err := c.TryLock(t.Context(), "facts", redlock.WithTTL(time.Minute)); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "max ttl 40s") {
			t.Fatalf("TryLock of 1m on a cluster advertising 40s = %v, want ErrInvalid naming max ttl 40s", err)
		}
		rep, err := c.CheckNodes(t.Context())
		if err != nil {
			t.Fatalf("CheckNodes = %v", err)
		}
		got := map[string]string{}
		for _, f := range rep.Facts[0] {
			got[f.Addr] = f.RunID
		}
		for _, m := range masters {
			if got[m] == "" {
				t.Errorf("facts of the cluster node %+v: no run id for master %s", rep.Facts[0], m)
			}
		}
		warned := 0
		for _, w := range rep.Warnings {
			for _, m := range masters {
				if strings.Contains(w, "("+m+")") && strings.Contains(w, "dlm node --fencing") {
					warned++
				}
			}
		}
		if warned != len(masters) {
			t.Errorf("warnings %q: want one per master of the cluster naming it", rep.Warnings)
		}
		l, err := c.TryLock(t.Context(), "facts", redlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatalf("TryLock of 30s = %v", err)
		}
		_ = l.Unlock(t.Context())

		alias := "redis://" + strings.Replace(masters[1], "127.0.0.1", "localhost", 1)
		twice := dialURLs(t, a, []string{urls[0], alias, urls[1]}, redlock.WithNodeTimeout(500*time.Millisecond))
		if _, err := twice.TryLock(t.Context(), "facts"); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "one server") {
			t.Errorf("TryLock over a cluster and one of its masters as a plain node = %v, want ErrInvalid saying one server", err)
		}
	})
}
