package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// mastersMem is a MemNode seen as a Redis Cluster of two masters, m1 and
// m2, every key on m1 (adapter.MastersNode): m2 can hang (hung), as a
// stopped process does, holding up every request that reaches it, the
// node's facts reading as one (Connect) among them, while m1 and the
// cluster's map (Replicas, which any server tells) answer.
type mastersMem struct {
	*redlocktest.MemNode
	hung       atomic.Bool
	promotable atomic.Bool // a replica that may promote itself is listed
}

func (n *mastersMem) Cluster() bool { return true }

func (n *mastersMem) Replicas(context.Context) ([]adapter.Replica, error) {
	if n.promotable.Load() {
		return []adapter.Replica{{Addr: "r1", Master: "m1", Promotable: true}}, nil
	}
	return nil, nil
}

func (n *mastersMem) Masters() []string { return []string{"m1", "m2"} }

func (n *mastersMem) MasterOf(string) string { return "m1" }

func (n *mastersMem) ConnectMaster(ctx context.Context, addr string) error {
	if addr == "m2" && n.hung.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return n.MemNode.Connect(ctx)
}

func (n *mastersMem) Connect(ctx context.Context) error {
	if n.hung.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return n.MemNode.Connect(ctx)
}

// A cluster node with one master hung answers the locks of the other
// master's slots at once; a lock that needs it for its quorum (one plain
// node down) must not wait for the hung master's facts reading: the
// facts that count for it are its master's and the cluster's map, both
// read at once. Before the facts were read per master, each such lock
// waited checkWait (four node timeouts: 2 s here) for a reading of the
// whole node that never came.
func TestHungClusterMasterDelaysNoLockOfAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, mems := redlocktest.NewMemNodes(3)
		cl := &mastersMem{MemNode: mems[2]}
		c, err := redlock.New([]redlock.Node{mems[0], mems[1], cl},
			redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for range 2 { // healthy: every facts reading answered
			l, err := c.TryLock(t.Context(), "r")
			if err != nil {
				t.Fatal(err)
			}
			_ = l.Unlock(t.Context())
		}
		cl.hung.Store(true)
		mems[1].Freeze() // the cluster node is needed for every quorum
		defer mems[1].Thaw()
		var took []time.Duration
		for range 3 {
			time.Sleep(2500 * time.Millisecond) // every reading stale
			start := time.Now()
			l, err := c.TryLock(t.Context(), "r")
			d := time.Since(start)
			if err != nil {
				t.Fatalf("TryLock with node 1 down and the cluster node's other master hung = %v", err)
			}
			_ = l.Unlock(t.Context())
			took = append(took, d)
		}
		for _, d := range took {
			if d >= time.Second {
				t.Fatalf("TryLocks granted by node 0 and the cluster node's live master took %v (fake time; the attempt takes 0), want each under 1s: the lock waited for the hung master's facts", took)
			}
		}
	})
}

// The other side: what the cluster's map tells (its replicas) still
// counts for every lock on the node, read within 2 s of the lock's start
// whichever master is hung: a replica that may promote itself, listed 5 s
// after the last lock, refuses the next lock that needs the node.
func TestClusterReplicaSeenWithAMasterHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, mems := redlocktest.NewMemNodes(3)
		cl := &mastersMem{MemNode: mems[2]}
		c, err := redlock.New([]redlock.Node{mems[0], mems[1], cl}, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		l, err := c.TryLock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Unlock(t.Context())
		cl.hung.Store(true)
		mems[1].Freeze()
		defer mems[1].Thaw()
		time.Sleep(5 * time.Second)
		cl.promotable.Store(true)
		if _, err = c.TryLock(t.Context(), "r"); err == nil || !errors.Is(err, redlock.ErrPromotableReplica) && !strings.Contains(err.Error(), "replica r1 of master m1 may promote itself") {
			t.Fatalf("TryLock needing the cluster node after it listed a replica that may promote itself = %v, want it refused naming the replica", err)
		}
	})
}
