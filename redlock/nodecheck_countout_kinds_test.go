package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// A node the client refuses (a replica attached, a max ttl below the
// lock's) is counted as a failed node by every kind of lock (nodecheck.go
// countedOut): it is not asked to grant, fenced or not. Before, a fenced
// Lock, WLock or LockAll (every election) was granted by it all the same,
// so a node whose replica may be promoted without the key counted toward
// the fenced lock's quorum.
func TestEveryKindOfLockCountsARefusedNodeOut(t *testing.T) {
	refusals := []struct {
		name  string
		facts adapter.Facts
	}{
		{"a replica attached", adapter.Facts{RunID: "r5-again", Replicas: 1}},
		{"max ttl below the lock's", adapter.Facts{RunID: "r5-again", MaxTTL: 5 * time.Second}},
	}
	kinds := []struct {
		name    string
		fencing bool
		lock    func(t *testing.T, c *redlock.Client) (*redlock.Lock, error)
	}{
		{"Lock", false, func(t *testing.T, c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(t.Context(), "r") }},
		{"fenced Lock", true, func(t *testing.T, c *redlock.Client) (*redlock.Lock, error) { return c.TryLock(t.Context(), "r") }},
		{"fenced WLock", true, func(t *testing.T, c *redlock.Client) (*redlock.Lock, error) { return c.WLock(t.Context(), "r") }},
		{"fenced LockAll", true, func(t *testing.T, c *redlock.Client) (*redlock.Lock, error) {
			return c.LockAll(t.Context(), []string{"r", "s"})
		}},
	}
	for _, rf := range refusals {
		for _, k := range kinds {
			t.Run(rf.name+"/"+k.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					nodes, mems := redlocktest.NewMemNodes(5)
					for i, m := range mems {
						m.SetFacts(adapter.Facts{RunID: "r" + m.String(), MaxTTL: 40 * time.Second})
						nodes[i] = m.WithFloor()
					}
					opts := []redlock.Option{redlock.WithTTL(10 * time.Second)}
					if k.fencing {
						opts = append(opts, redlock.WithFencing())
					}
					c, err := redlock.New(nodes, opts...)
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					// The first lock reads the facts; then node 5 changes.
					first, err := c.TryLock(t.Context(), "warm")
					if err != nil {
						t.Fatal(err)
					}
					_ = first.Unlock(t.Context())
					mems[4].SetFacts(rf.facts)
					time.Sleep(5 * time.Second) // past the 2 s re-reading
					l, err := k.lock(t, c)
					if err != nil {
						t.Fatalf("%s with node 5 of 5 refused: %v (nodes 1-4 are a quorum)", k.name, err)
					}
					defer l.Unlock(t.Context())
					keys, _ := mems[4].Keys(t.Context(), redlock.DefaultKeyPrefix)
					if len(keys) > 0 {
						t.Errorf("%s: node 5, refused (%s) and so counted as a failed node, was asked to grant and holds %q", k.name, rf.name, keys)
					}
				})
			})
		}
	}
}
