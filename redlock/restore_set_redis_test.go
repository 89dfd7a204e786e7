package redlock_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A Redis Cluster node beside plain masters, one of its masters restarted
// without persistence, gets the lock back at the lock's next extension,
// so that the lock outlives the next node's restart. Over real servers (2
// plain masters and a cluster node of 2 masters, shared by the cases),
// with both adapters; the extensions are called by hand.
func TestClusterMasterRestartRestores(t *testing.T) {
	plain := redlocktest.Start(t, 2)
	cs := redlocktest.StartRedisClusters(t, 1, 2, 0)
	urls := append(plain.URLs(), cs[0].URL())
	t.Run("a set on both masters", func(t *testing.T) { clusterRestoresASet(t, plain, cs[0], urls) })
	t.Run("a node answering late", func(t *testing.T) { clusterAnsweringLateRestored(t, plain, cs[0], urls) })
}

// clusterRestoresASet: a set whose resources span both masters of the
// cluster node is restored on that node when one master restarts (its
// slots' keys gone, the other master's kept).
func clusterRestoresASet(t *testing.T, plain *redlocktest.Cluster, cs *redlocktest.RedisCluster, urls []string) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		// A ttl of a minute: the requests live up to a tenth of it,
		// room for a test process not run for seconds.
		c := dialURLs(t, a, urls, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(500*time.Millisecond))
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
				for i, m := range cs.Masters() {
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
		if err := cs.Masters()[0].Client().FlushAll(ctx).Err(); err != nil { // its restart without persistence
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

// clusterAnsweringLateRestored: the cluster node answers after the plain
// masters (here its masters are paused for 300 ms, as a node of longer
// round trips), so its "not held" comes after the extension's decision;
// the lock restores it all the same, and the next node's restart does not
// end the lock. The extension's context is cancelled as it returns, as the
// auto-extender's is. Before, the cluster node was never restored: "the
// cluster node does not hold the lock 10s after an extension that it
// answered late".
func clusterAnsweringLateRestored(t *testing.T, plain *redlocktest.Cluster, cs *redlocktest.RedisCluster, urls []string) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		// The requests live up to the limit, a tenth of the ttl (6 s):
		// room for the 300 ms pause and a test process not run for
		// seconds on a loaded machine (a late answer past the limit is
		// dropped: with a pause of 2.5 s and a 20 s ttl, whose limit is
		// 2 s, the test failed 4 of 4).
		const ttl, wait = time.Minute, 20 * time.Second
		c := dialURLs(t, a, urls, redlock.WithTTL(ttl), redlock.WithNodeTimeout(500*time.Millisecond))
		ctx := t.Context()
		r := a.name + ":late"
		l, err := c.Lock(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(context.Background())
		key := redlock.HashTaggedKey(redlock.DefaultKeyPrefix, r)
		for _, m := range cs.Masters() {
			if err := m.Client().FlushAll(ctx).Err(); err != nil { // the restart without persistence
				t.Fatal(err)
			}
			if err := m.Client().ClientPause(ctx, 300*time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
		}
		ectx, cancel := context.WithCancel(ctx)
		err = l.Extend(ectx)
		cancel()
		if err != nil {
			t.Fatalf("Extend with the plain nodes holding the lock: %v", err)
		}
		held := func() bool {
			for _, m := range cs.Masters() {
				if v, err := m.Client().Get(ctx, key).Result(); err == nil && v == l.Value() {
					return true
				}
			}
			return false
		}
		for deadline := time.Now().Add(wait); !held(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the cluster node does not hold the lock %v after an extension that it answered late", wait)
			}
		}
		if err := plain.Servers[0].Client().FlushAll(ctx).Err(); err != nil { // the next node of the rolling restart
			t.Fatal(err)
		}
		if err := l.Extend(ctx); err != nil {
			t.Errorf("Extend after the next node's restart: %v", err)
		}
	})
}
