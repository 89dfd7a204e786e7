package redlock_test

import (
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A set whose resources span both masters of a Redis Cluster node is
// restored on that node when one master restarts without persistence (its
// slots' keys gone, the other master's kept), so that the set outlives
// the next node's restart. Over real servers, with both adapters;
// the extension is called by hand.
func TestClusterMasterRestartRestoresASet(t *testing.T) {
	plain := redlocktest.Start(t, 2)
	cs := redlocktest.StartRedisClusters(t, 1, 2, 0)
	urls := append(plain.URLs(), cs[0].URL())
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		c := dialURLs(t, a, urls, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(500*time.Millisecond))
		ctx := t.Context()
		var set []string
		for _, r := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} { // slots on both masters
			set = append(set, a.name+":"+r)
		}
		// The other plain node is down (the next of the rolling
		// restart, or any one failure): the plain node left and the
		// cluster node are the quorum, so every request waits for the
		// cluster node's answer.
		plain.Servers[1].Kill()
		defer plain.Servers[1].Restart(0)
		l, err := c.LockAll(ctx, set)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(t.Context())
		onCluster := func() (held, onFirst int) {
			for _, r := range set {
				for i, m := range cs[0].Masters() {
					if v, err := m.Client().Get(ctx, redlock.HashTaggedKey(redlock.DefaultKeyPrefix, r)).Result(); err == nil && v == l.Value() {
						held++
						if i == 0 {
							onFirst++
						}
					}
				}
			}
			return held, onFirst
		}
		if held, onFirst := onCluster(); held != len(set) || onFirst == 0 || onFirst == len(set) {
			t.Fatalf("the cluster node holds %d of the set's %d keys, %d on its first master: want every one, on both masters", held, len(set), onFirst)
		}
		if err := cs[0].Masters()[0].Client().FlushAll(ctx).Err(); err != nil { // its restart without persistence
			t.Fatal(err)
		}
		if err := l.Extend(ctx); err != nil {
			t.Fatalf("Extend with the cluster's first master restarted and another node down: %v", err)
		}
		if held, _ := onCluster(); held != len(set) {
			t.Fatalf("after the extension the cluster node holds %d of the set's %d keys, want every one restored", held, len(set))
		}
	})
}
