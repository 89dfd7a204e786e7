package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// The operator's tools over healthy slow nodes: a holder locks r and
// dies; two of three nodes then answer late, at round trips a grant of
// the operator's client would wait for (up to its ttl/2 - drift). Inspect
// and Locks see the lock on every node, and ForceRelease deletes it on
// every node: none is an
// error, and no node holds the dead holder's key after it (dlm status,
// dlm release --force). In memory, under synctest.
//
// Failed before (each node was bounded by the node timeout's limit, 1 s):
// "nodes 2 and 3 healthy, answering 1.2s late (ttl 1m0s): Inspect saw 2
// of 3 nodes fail ...; ForceRelease deleted 1 keys ..., and 2 of 3 nodes
// still hold the key".
func TestOperatorToolsWaitForSlowHealthyNodes(t *testing.T) {
	for _, tc := range []struct {
		ttl, late time.Duration
		fencing   bool
	}{
		{time.Minute, 1200 * time.Millisecond, false},
		{10 * time.Second, 4800 * time.Millisecond, false},
		{10 * time.Second, 4800 * time.Millisecond, true}, // Inspect reads the fence counter too
	} {
		t.Run(fmt.Sprintf("ttl %v late %v fencing %v", tc.ttl, tc.late, tc.fencing), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				var opts []redlock.Option
				if tc.fencing {
					opts = append(opts, redlock.WithFencing())
				}
				// The holder's lock outlives the test: a key gone is
				// the operator's work, not its expiry.
				holder, err := redlock.New(nodes, append(opts, redlock.WithTTL(time.Hour))...)
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				if _, err := holder.Lock(t.Context(), "r"); err != nil { // a holder that then dies
					t.Fatal(err)
				}
				// Lock returns at its quorum: a node's request may still
				// be on its way, and would then be answered late too.
				synctest.Wait()
				mems[1].SetSlow(tc.late)
				mems[2].SetSlow(tc.late)
				// The operator's client, of ttl: it knows nothing of the nodes.
				c, err := redlock.New(nodes, append(opts, redlock.WithTTL(tc.ttl))...)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				info, err := c.Inspect(t.Context(), "r")
				if err != nil {
					t.Fatal(err)
				}
				failed := 0
				for _, nv := range info.Nodes {
					if nv.Err != nil || nv.Holder != 1 {
						failed++
					}
				}
				infos, complete, err := c.Locks(t.Context(), 0)
				if err != nil || !complete || len(infos) != 1 || infos[0].Mode != redlock.ModeWrite {
					t.Errorf("nodes 2 and 3 healthy, answering %v late (ttl %v): Locks = %v, complete %v, %v; want r held for write", tc.late, tc.ttl, infos, complete, err)
				}
				rep, err := c.ForceRelease(t.Context(), "r")
				if err != nil {
					t.Fatal(err)
				}
				released := 0
				for _, n := range rep.Released {
					released += n
				}
				synctest.Wait()
				held := 0
				for _, m := range mems {
					if _, ok, _ := m.Value(context.Background(), redlock.DefaultKeyPrefix+"r"); ok {
						held++
					}
				}
				if failed > 0 || info.Mode != redlock.ModeWrite || released < 3 || held > 0 {
					t.Errorf("nodes 2 and 3 healthy, answering %v late (ttl %v): Inspect saw %d of 3 nodes fail or not hold the lock (mode %v, %v); ForceRelease deleted %d keys (errors %v), and %d of 3 nodes still hold the key",
						tc.late, tc.ttl, failed, info.Mode, info.Nodes, released, rep.Errs, held)
				}
			})
		})
	}
}

// Over a node that never answers (frozen), the operator's tools still end
// in bounded time: Inspect waits for it ttl/2 - drift of the client (the
// longest a grant waits for a slow node), and then, for a ttl, the node
// timeout's limit only (a dead node costs one patience per ttl); the
// nodes that answer are shown and released.
func TestOperatorToolsOverAFrozenNodeEndInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		nodes, mems := redlocktest.NewMemNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Lock(t.Context(), "r"); err != nil {
			t.Fatal(err)
		}
		mems[2].Freeze()
		defer mems[2].Thaw()
		patience := ttl/2 - (ttl/100 + 2*time.Millisecond) // drift: ttl x 0.01 + 2ms
		limit := 20 * redlock.DefaultNodeTimeout
		took := func(what string, want time.Duration, f func() error) {
			t.Helper()
			start := time.Now()
			if err := f(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got := time.Since(start); got != want {
				t.Errorf("node 3 frozen (ttl %v): %s took %v, want %v", ttl, what, got, want)
			}
		}
		var info redlock.LockInfo
		took("the first Inspect", patience, func() (err error) { info, err = c.Inspect(t.Context(), "r"); return })
		if info.Mode != redlock.ModeWrite || info.Nodes[2].Err == nil {
			t.Errorf("node 3 frozen: Inspect = mode %v, nodes %v; want write, node 3 an error", info.Mode, info.Nodes)
		}
		took("the next Inspect", limit, func() (err error) { _, err = c.Inspect(t.Context(), "r"); return })
		var rep redlock.ForceReport
		took("ForceRelease", limit, func() (err error) { rep, err = c.ForceRelease(t.Context(), "r"); return })
		if rep.Released[0] != 1 || rep.Released[1] != 1 {
			t.Errorf("node 3 frozen: ForceRelease released %v, want the key on nodes 1 and 2", rep.Released)
		}
		time.Sleep(ttl) // the node is waited for again
		took("an Inspect a ttl later", patience, func() (err error) { _, err = c.Inspect(t.Context(), "r"); return })
	})
}
