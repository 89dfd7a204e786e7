package election_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// lateNode is a MemNode whose record writes arrive late, in fake time:
// while slow is set, a write of a record ending in old waits oldDelay,
// and any other record write waits newDelay, before the node applies it.
type lateNode struct {
	*redlocktest.MemNode
	slow               *atomic.Bool
	old                string
	oldDelay, newDelay time.Duration
}

func (n lateNode) PutRecord(ctx context.Context, key, recordKey, value, record string, retention time.Duration) (bool, error) {
	if n.slow.Load() {
		d := n.newDelay
		if strings.HasSuffix(record, " "+n.old) {
			d = n.oldDelay
		}
		// Fake time, below the node timeout; at least a moment, so
		// that the lock's own requests on their way land first (fake
		// time moves only once every goroutine waits).
		time.Sleep(max(d, time.Millisecond))
	}
	// On its way, the write lands whatever happens to the caller's ctx.
	return n.MemNode.PutRecord(context.WithoutCancel(ctx), key, recordKey, value, record, retention)
}

// Proclaim's record is never replaced by an earlier write of the
// leadership's record that was still on its way to a node when Proclaim
// began: the election's own (its PutRecord returned at a quorum) or a
// republication's. Forced order, 5 nodes: the old record's writes to
// nodes 3 and 4 land 100ms late, Proclaim's to nodes 0 and 1 land 200ms
// late, and Leader reads at 150ms. Failed before (writes of one record
// were not ordered on a node; TestProclaim failed this way 2 of 400 runs
// under -race): "Leader = {ID:a Term:1}, true, <nil>; want {ID:a at
// 10.0.0.7:8080 Term:1}": Proclaim returned on nodes 2, 3 and 4, then the
// old record landed on 3 and 4, beside the old one still on 0 and 1.
func TestProclaimNotUndoneByAnEarlierWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// republish: the old write held back is a republication's
		// (keepRecord, every ttl/3), not the election's.
		republish bool
	}{
		{name: "the election's record"},
		{name: "a republication", republish: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, mems := redlocktest.NewMemNodes(5)
				var slow atomic.Bool
				nodes := make([]redlock.Node, len(mems))
				for i, m := range mems {
					n := lateNode{MemNode: m, slow: &slow, old: "a"}
					if i >= 3 {
						n.oldDelay = 100 * time.Millisecond
					}
					if i <= 1 {
						n.newDelay = 200 * time.Millisecond
					}
					nodes[i] = n
				}
				e := newElection(t, newClient(t, nodes))
				slow.Store(!tc.republish)
				a, err := e.Campaign(t.Context(), "a")
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if tc.republish {
					slow.Store(true)
					// Just past the first republication, which returned
					// at the quorum of nodes 0, 1 and 2 (fake time moves
					// only once every goroutine waits).
					time.Sleep(ttl/3 + time.Millisecond)
					start = time.Now()
				}
				const want = "a at 10.0.0.7:8080"
				if err := a.Proclaim(t.Context(), want); err != nil {
					t.Fatal(err)
				}
				if d := time.Until(start.Add(150 * time.Millisecond)); d > 0 {
					time.Sleep(d) // the old record landed; Proclaim's is on its way to 0 and 1
				}
				mustLeader(t, e, true, election.Leader{ID: want, Term: a.Term()})
				_ = a.Resign(t.Context())
			})
		})
	}
}
