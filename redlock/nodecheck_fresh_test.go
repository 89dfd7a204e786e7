package redlock_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// A lock does not wait for the facts reading of a node that does not
// answer: with one node of three frozen (its reading blocks, as a
// SIGSTOPped server's does), every TryLock that the two live nodes grant
// at once returns at once. Before, a lock that found the facts older than
// 2 s waited for the whole reading, up to four node timeouts: "19 of 20
// TryLocks ... waited 50ms or more for the facts reading; worst 250ms"
// (a lock every 2.5 s), and with a node timeout of 500 ms, whose wait
// (2 s) equals the refresh period, a reading was stale when published:
// "13 of 20 ... worst 2s" (a lock every 300 ms).
func TestFrozenNodeFactsReadingHoldsUpNoLock(t *testing.T) {
	cases := []struct{ nt, every time.Duration }{
		{50 * time.Millisecond, 300 * time.Millisecond},
		{50 * time.Millisecond, 2500 * time.Millisecond},
		{500 * time.Millisecond, 300 * time.Millisecond},
		{500 * time.Millisecond, 2500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.nt.String()+"/every-"+tc.every.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, mems := redlocktest.NewMemNodes(3)
				nodes := make([]redlock.Node, 3)
				for i, m := range mems {
					m.SetFacts(adapter.Facts{RunID: "r" + m.String()})
					nodes[i] = frozenConnect{m}
				}
				c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(tc.nt))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l, err := c.TryLock(t.Context(), "warm")
				if err != nil {
					t.Fatal(err)
				}
				_ = l.Unlock(t.Context())
				mems[2].Freeze()
				defer mems[2].Thaw()
				const n = 20
				late, worst := 0, time.Duration(0)
				for i := range n {
					start := time.Now()
					l, err := c.TryLock(t.Context(), "r")
					d := time.Since(start)
					if err != nil {
						t.Fatalf("TryLock %d with one node of three frozen: %v", i, err)
					}
					_ = l.Unlock(t.Context())
					if d > 0 {
						late++
					}
					worst = max(worst, d)
					time.Sleep(tc.every)
				}
				if late > 0 {
					t.Errorf("one node of three frozen, the others answering at once: %d of %d TryLocks waited, worst %v; want none", late, n, worst)
				}
			})
		})
	}
}

// readingNode is a MemNode whose facts are those its server had when its
// last reading (Connect) began, as a real node's are: what the server
// changes (SetServer) is seen by the first reading that begins after the
// change, rtt later.
type readingNode struct {
	*redlocktest.MemNode
	rtt time.Duration

	mu     sync.Mutex
	server adapter.Facts
	known  []adapter.Facts
	ver    uint64
}

func newReadingNode(m *redlocktest.MemNode, rtt time.Duration) *readingNode {
	f := adapter.Facts{Addr: m.String(), RunID: "r" + m.String(), ReplicationKnown: true}
	return &readingNode{MemNode: m, rtt: rtt, server: f, known: []adapter.Facts{f}, ver: 1}
}

// SetServer changes what the server would tell a reading.
func (n *readingNode) SetServer(change func(*adapter.Facts)) {
	n.mu.Lock()
	change(&n.server)
	n.mu.Unlock()
}

func (n *readingNode) Connect(ctx context.Context) error {
	if n.Frozen() {
		<-ctx.Done()
		return ctx.Err()
	}
	n.mu.Lock()
	read := n.server
	n.mu.Unlock()
	select {
	case <-time.After(n.rtt):
	case <-ctx.Done():
		return ctx.Err()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !reflect.DeepEqual(read, n.known[0]) {
		n.known, n.ver = []adapter.Facts{read}, n.ver+1
	}
	return nil
}

func (n *readingNode) Facts() ([]adapter.Facts, uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.known, n.ver
}

// The bound the docs state for what an operator changes on a running
// server (docs/design.md, "What the client checks of its nodes"): every
// lock that begins 2 s after the change is checked against it, its grant
// waiting up to one reading's round trip. A replica attached to one node
// of three: the lock beginning 2 s after is kept by the other two, and the
// node is named to the observers before TryLock returns; attached to two:
// the lock is not granted (ErrPromotableReplica, or those two counted out
// and the frozen one timed out). Whether the client locked
// all along (its facts read every second) or was idle (every node's facts
// stale when the lock begins), with readings answering at once or late,
// and with a third node frozen.
func TestChangedNodeSeenByTheLocksTwoSecondsAfter(t *testing.T) {
	for _, busy := range []bool{false, true} {
		for _, rtt := range []time.Duration{0, 30 * time.Millisecond, 150 * time.Millisecond} {
			for _, changed := range []int{1, 2} {
				name := map[bool]string{false: "idle", true: "busy"}[busy] + "/rtt-" + rtt.String() + "/" + map[int]string{1: "one-node", 2: "two-nodes"}[changed]
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) { changedNodeSeen(t, busy, rtt, changed) })
				})
			}
		}
	}
}

func changedNodeSeen(t *testing.T, busy bool, rtt time.Duration, changed int) {
	_, mems := redlocktest.NewMemNodes(5)
	nodes := make([]redlock.Node, len(mems))
	rn := make([]*readingNode, len(mems))
	for i, m := range mems {
		rn[i] = newReadingNode(m, rtt)
		nodes[i] = rn[i]
	}
	var w warnings
	c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second), redlock.WithObserver(&w))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lockOnce := func() (*redlock.Lock, error) {
		l, err := c.TryLock(t.Context(), "r")
		if err == nil {
			_ = l.Unlock(t.Context())
		}
		return l, err
	}
	if _, err := lockOnce(); err != nil {
		t.Fatal(err)
	}
	mems[4].Freeze() // never answers, its reading neither
	defer mems[4].Thaw()
	if busy {
		for range 10 {
			time.Sleep(300 * time.Millisecond)
			if _, err := lockOnce(); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		time.Sleep(5 * time.Second)
	}
	for i := range changed {
		rn[i].SetServer(func(f *adapter.Facts) { f.Replicas = 1 })
	}
	// Locks go on meanwhile (or not), and may or may not see it yet.
	if busy {
		for range 6 {
			time.Sleep(300 * time.Millisecond)
			_, _ = lockOnce()
		}
		time.Sleep(200 * time.Millisecond)
	} else {
		time.Sleep(2 * time.Second)
	}
	_, err = lockOnce()
	switch changed {
	case 1:
		if err != nil {
			t.Fatalf("TryLock 2 s after a replica was attached to one node of five (one frozen) = %v, want it granted by the others", err)
		}
		if got := strings.Join(w.messages(), "\n"); !strings.Contains(got, "node "+mems[0].String()+" is counted as a failed node") {
			t.Errorf("TryLock 2 s after a replica was attached to node %s returned before the client saw it (warnings %q)", mems[0], got)
		}
	case 2:
		// Refused before any request, or counted out and then not
		// acquired without the frozen node: either way not granted, and
		// the replicas named.
		if err == nil || !errors.Is(err, redlock.ErrPromotableReplica) && !strings.Contains(err.Error(), "has 1 replica") {
			t.Errorf("TryLock 2 s after a replica was attached to two nodes of five (one frozen) = %v, want ErrPromotableReplica or the two nodes counted out", err)
		}
	}
}
