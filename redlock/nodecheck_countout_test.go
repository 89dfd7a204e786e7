package redlock_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// One node of five whose facts the client refuses (a replica attached, a
// max ttl below the lock's, as after a restart) is counted as a failed
// node, not a refusal of every lock: a held auto-extended lock (a
// leadership) goes on on the other four, a new lock is granted by them,
// the node gets no grant, and the observers are told why. Before, every
// lock of the client was refused and the held lock ended at its validity.
func TestOneRefusedNodeIsCountedAsFailed(t *testing.T) {
	cases := []struct {
		name  string
		facts adapter.Facts
		warn  string // told the observers; "" for none (the ttl is the lock's)
	}{
		{"a replica attached", adapter.Facts{RunID: "r5-again", Replicas: 1}, "node m5 is counted as a failed node by every lock"},
		{"max ttl below the lock's", adapter.Facts{RunID: "r5-again", MaxTTL: 5 * time.Second}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				for _, m := range mems {
					m.SetFacts(adapter.Facts{RunID: "r" + m.String(), MaxTTL: 40 * time.Second})
				}
				var w warnings
				c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second), redlock.WithObserver(&w))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l, err := c.Lock(t.Context(), "leader", redlock.WithAutoExtend())
				if err != nil {
					t.Fatal(err)
				}
				defer l.Unlock(t.Context())
				mems[4].SetFacts(tc.facts) // node 5 restarted so
				select {
				case <-l.Done():
					t.Errorf("%s on node 5 of 5 ended a held auto-extended lock: %v (nodes 1-4 hold it)", tc.name, l.Err())
				case <-time.After(time.Minute):
				}
				l2, err := c.TryLock(t.Context(), "other")
				if err != nil {
					t.Fatalf("%s on node 5 of 5: TryLock of a free resource = %v (nodes 1-4 are a quorum)", tc.name, err)
				}
				if keys, _ := mems[4].Keys(t.Context(), redlock.DefaultKeyPrefix); len(keys) > 0 {
					t.Errorf("node 5, counted as failed, holds %q", keys)
				}
				_ = l2.Unlock(t.Context())
				if got := strings.Join(w.messages(), "\n"); tc.warn != "" && !strings.Contains(got, tc.warn) {
					t.Errorf("warnings %q, want %q", got, tc.warn)
				}
				// Three of five refused leave no quorum: every lock is
				// refused, naming them.
				mems[3].SetFacts(tc.facts)
				mems[2].SetFacts(tc.facts)
				if _, err := c.TryLock(t.Context(), "third"); err == nil || !strings.Contains(err.Error(), "m3") && !strings.Contains(err.Error(), "m5") {
					t.Errorf("three nodes of five refused: TryLock = %v, want a refusal naming them", err)
				}
			})
		})
	}
}
