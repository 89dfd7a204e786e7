package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// frozenConnect is a MemNode whose facts reading (Connect) does not answer
// while it is frozen, as a SIGSTOPped redis-server's does not: its
// requests wait too (MemNode.Freeze).
type frozenConnect struct {
	*redlocktest.MemNode
}

func (n frozenConnect) Connect(ctx context.Context) error {
	if n.Frozen() {
		<-ctx.Done()
		return ctx.Err()
	}
	return n.MemNode.Connect(ctx)
}

// An extension checks the nodes' facts first (doExtend, checkExtension)
// and does not wait for a reading that a frozen node holds up: before, it
// waited up to four node timeouts before its T1, and an auto-extended lock
// whose ttl is a few node timeouts ended with one node of three frozen and
// nothing else wrong. The control: the
// frozen node answers its facts reading at once (only Connect answers).
func TestFrozenNodeFactsReadingKeepsAutoExtendedLock(t *testing.T) {
	cases := []struct {
		nt, ttl time.Duration
	}{
		{500 * time.Millisecond, 3 * time.Second},
		{500 * time.Millisecond, 2 * time.Second},
		{50 * time.Millisecond, 500 * time.Millisecond},
	}
	for _, tc := range cases {
		for _, blocks := range []bool{false, true} {
			name := tc.nt.String() + "/" + tc.ttl.String()
			if blocks {
				name += "/facts-reading-blocks"
			} else {
				name += "/control"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					_, mems := redlocktest.NewMemNodes(3)
					nodes := make([]redlock.Node, 3)
					for i, m := range mems {
						m.SetFacts(adapter.Facts{RunID: "r" + m.String()})
						nodes[i] = m
						if blocks {
							nodes[i] = frozenConnect{m}
						}
					}
					c, err := redlock.New(nodes, redlock.WithTTL(tc.ttl), redlock.WithNodeTimeout(tc.nt))
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					l, err := c.Lock(t.Context(), "r", redlock.WithAutoExtend())
					if err != nil {
						t.Fatal(err)
					}
					mems[2].Freeze()
					select {
					case <-l.Done():
						t.Errorf("node timeout %v, ttl %v: an auto-extended lock ended with one node of three frozen (its facts reading blocking: %v): %v", tc.nt, tc.ttl, blocks, l.Err())
					case <-time.After(time.Minute):
					}
					mems[2].Thaw()
					_ = l.Unlock(t.Context())
				})
			})
		}
	}
}
