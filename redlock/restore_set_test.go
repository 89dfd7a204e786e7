package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/internal/slots"
	"dlm/redlock/redlocktest"
)

// slotMem is a MemNode that is a Redis Cluster as the adapters drive one:
// each operation on a set whose keys span hash slots is one step per slot
// (slots.SplitCalls), and a master that restarts forgets the keys of its
// slots only.
type slotMem struct{ clusterMem }

func (n slotMem) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	n.StartAll([]adapter.Call{{Ctx: ctx, Req: req, To: to, Tag: tag}})
}

func (n slotMem) StartAll(calls []adapter.Call) {
	n.MemNode.StartAll(slots.SplitCalls(calls, n.MemNode.StartAll))
}

func (n slotMem) AcquireAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return slots.Do(ctx, adapter.Request{Op: adapter.OpAcquireAll, Keys: keys, Value: value, TTL: ttl}, n.StartAll)
}

func (n slotMem) ExtendAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return slots.Do(ctx, adapter.Request{Op: adapter.OpExtendAll, Keys: keys, Value: value, TTL: ttl}, n.StartAll)
}

func (n slotMem) RestoreAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	ok, _, err := slots.RunSplit(slots.Split(keys), keys, nil, func(keys, _ []string) (bool, uint64, error) {
		ok, err := n.MemNode.RestoreAll(ctx, keys, value, ttl)
		return ok, 0, err
	}, nil)
	return ok, err
}

func (n slotMem) ReleaseAll(ctx context.Context, keys []string, value string, announce bool) (bool, error) {
	op := adapter.OpReleaseAll
	if announce {
		op = adapter.OpReleaseAllAnnounce
	}
	return slots.Do(ctx, adapter.Request{Op: op, Keys: keys, Value: value}, n.StartAll)
}

// A node can forget part of a set: a Redis Cluster node whose masters
// restart one at a time loses the keys of the restarted master's slots
// only. The set's extension then finds the node holding some of its keys
// (ExtendAll: not held), and the restore must set the missing keys again
// where every key still there holds the lock's own value; otherwise the
// node is never restored, and the next node of the rolling restart ends
// the lock. A key of another value is never overwritten: that node is
// left as it is and counts for nothing.
func TestExtensionRestoresAPartlyForgottenSet(t *testing.T) {
	set := []string{"a", "b", "c", "d"}
	for _, tt := range []struct {
		name    string
		cluster bool   // node 1 is a Redis Cluster (its keys tagged)
		lost    []int  // the set's resources that node 1 forgets
		other   string // a value another client then set under the first lost key on node 1
	}{
		{name: "plain node, one key lost", lost: []int{0}},
		{name: "cluster node, one master restarted", cluster: true, lost: []int{0, 2}},
		{name: "cluster node, the set's keys of the other master only", cluster: true, lost: []int{1, 2, 3}},
		{name: "another client's key is left alone", cluster: true, lost: []int{0, 2}, other: "another client's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = 3 * time.Second
				nodes, mems := redlocktest.NewMemNodes(3)
				key := func(r string) string { return "dlm:lock:" + r }
				if tt.cluster {
					nodes[0] = slotMem{clusterMem{mems[0]}}
					key = func(r string) string { return redlock.HashTaggedKey(redlock.DefaultKeyPrefix, r) }
				}
				c := memClient(t, nodes, redlock.WithTTL(ttl))
				ctx := t.Context()
				l, err := c.LockAll(ctx, set, redlock.WithAutoExtend())
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait() // every node answered the acquisition
				for _, r := range tt.lost {
					if ok, err := mems[0].Release(ctx, key(set[r]), l.Value()); !ok || err != nil {
						t.Fatalf("dropping %s on node 1: %v, %v", key(set[r]), ok, err)
					}
				}
				if tt.other != "" {
					if err := mems[0].Put(ctx, key(set[tt.lost[0]]), tt.other); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(ttl) // the next extensions (every ttl/3)
				synctest.Wait()
				held := 0
				for _, r := range set {
					v, ok, _ := mems[0].Value(ctx, key(r))
					if ok && v == l.Value() {
						held++
					}
				}
				switch {
				case tt.other == "" && held != len(set):
					t.Errorf("node 1 holds %d of the set's %d keys a ttl after it forgot %d of them, want every one restored", held, len(set), len(tt.lost))
				case tt.other != "":
					if v, _, _ := mems[0].Value(ctx, key(set[tt.lost[0]])); v != tt.other {
						t.Errorf("another client's key on node 1 was overwritten: it holds %q", v)
					}
				}
				// The next node of the rolling restart: with node 1
				// restored, nodes 1 and 3 are a quorum.
				mems[1].Restart(ttl + ttl/4)
				time.Sleep(2 * ttl)
				err = l.Err()
				if tt.other == "" && err != nil {
					t.Errorf("the set ended when the next node restarted: %v", err)
				}
				if tt.other != "" && err == nil {
					t.Errorf("the set is held with node 1 holding another client's key and node 2 restarted: only node 3 holds it")
				}
				_ = l.Unlock(context.Background())
			})
		})
	}
}
