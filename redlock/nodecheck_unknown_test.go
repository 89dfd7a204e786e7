package redlock_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// A refused node counts as a failed node also while another node's facts
// are unknown. Five nodes: node 4 down since the client started (its facts
// never read: a server not yet up, a host unreachable), node 5 with a
// replica (refused). Nodes 1-3 are a quorum and grant every lock. Before,
// each grant was given up with ErrInvalid naming node 5: while any node's
// facts were unknown, checkGranted judged the granted lock with every
// refused node refusing it.
func TestUnknownNodeKeepsTheCountOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		for _, m := range mems[:3] {
			m.SetFacts(adapter.Facts{RunID: "r" + m.String()})
		}
		mems[3].SetDown(true) // never connects: no facts
		mems[4].SetFacts(adapter.Facts{RunID: "r5", Replicas: 1})
		c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		refused := 0
		for range 5 {
			l, err := c.TryLock(t.Context(), "r")
			if errors.Is(err, redlock.ErrInvalid) {
				refused++
				t.Logf("refused: %v", err)
				continue
			}
			if err != nil {
				t.Fatalf("TryLock: %v", err)
			}
			_ = l.Unlock(t.Context())
			time.Sleep(3 * time.Second)
		}
		if refused > 0 {
			t.Errorf("node 4 down (facts unknown) and node 5 refused (a replica): %d of 5 TryLocks refused with ErrInvalid, although nodes 1-3 are a quorum and node 5 is only to be counted as failed", refused)
		}
	})
	// Control: node 4 down after its facts were read, the same node 5:
	// every TryLock granted by nodes 1-3.
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		for _, m := range mems[:4] {
			m.SetFacts(adapter.Facts{RunID: "r" + m.String()})
		}
		mems[3].SetDown(true)
		mems[4].SetFacts(adapter.Facts{RunID: "r5", Replicas: 1})
		c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		l, err := c.TryLock(t.Context(), "r")
		if err != nil {
			t.Fatalf("control (node 4's facts known): TryLock = %v", err)
		}
		_ = l.Unlock(t.Context())
	})
}
