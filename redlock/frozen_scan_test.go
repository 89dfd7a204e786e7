package redlock_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Locks (dlm status's list) over 3 nodes, m3 frozen, m1 and m2 healthy:
// a quorum answers the scan at once. Locks returns within the node
// timeout's limit past the quorum (and a few node timeouts), whatever the
// number of locks, from a new client (every dlm status) and a long-lived
// one: it lists what the quorum holds, each lock held for write, and its
// error names the node that did not answer (a *ScanError, which
// errors.Is finds as ErrScanIncomplete: a lock whose keys are only on m3
// may be missing), as Inspect names it in its NodeView.
func TestLocksOverAFrozenNodeListsWhatTheQuorumSaid(t *testing.T) {
	const (
		ttl   = 10 * time.Second
		bound = 20*redlock.DefaultNodeTimeout + 4*redlock.DefaultNodeTimeout
	)
	resources := []string{"a", "b", "c", "d", "e"}
	for _, fresh := range []bool{true, false} {
		t.Run(map[bool]string{true: "new client", false: "long-lived client"}[fresh], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				defer mems[2].Thaw()
				holder, err := redlock.New(nodes, redlock.WithTTL(time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				for _, r := range resources {
					if _, err := holder.Lock(t.Context(), r); err != nil {
						t.Fatal(err)
					}
				}
				synctest.Wait()
				var c *redlock.Client
				if !fresh {
					if c, err = redlock.New(nodes, redlock.WithTTL(ttl)); err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					if _, _, err := c.Locks(t.Context(), 0); err != nil {
						t.Fatal(err)
					}
				}
				mems[2].Freeze()
				if fresh {
					if c, err = redlock.New(nodes, redlock.WithTTL(ttl)); err != nil {
						t.Fatal(err)
					}
					defer c.Close()
				}
				for round := range 2 {
					start := time.Now()
					infos, complete, err := c.Locks(t.Context(), 0)
					took := time.Since(start)
					var held []string
					for _, in := range infos {
						if in.Mode == redlock.ModeWrite {
							held = append(held, in.Resource)
						}
					}
					var se *redlock.ScanError
					var ne *redlock.NodeError
					named := errors.As(err, &se) && len(se.Failed) == 1 && errors.As(se.Failed[0], &ne) && ne.Node == "m3"
					if took > bound || fmt.Sprint(held) != fmt.Sprint(resources) || complete || !named || !errors.Is(err, redlock.ErrScanIncomplete) {
						t.Errorf("m3 frozen, m1 and m2 healthy (ttl %v), Locks %d: took %v (want within %v), held %v (want %v), complete %v, err %v; want the quorum's list, incomplete, an error naming m3",
							ttl, round+1, took, bound, held, resources, complete, err)
					}
				}
			})
		})
	}
}
