package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// secondPageFails is a MemNode whose SCAN fails after its first page.
type secondPageFails struct{ *redlocktest.MemNode }

var errPage = errors.New("connection reset by peer")

func (n secondPageFails) Scan(ctx context.Context, prefix, cursor string, count int) ([]string, string, error) {
	if cursor != "" {
		return nil, "", errPage
	}
	return n.MemNode.Scan(ctx, prefix, cursor, count)
}

// A node whose SCAN fails on a later page makes the listing incomplete,
// naming the node, instead of a listing that silently misses its keys.
func TestLocksReportsAFailedScanPage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing int // nodes whose scan fails, from the first
	}{
		{"one of three", 1},
		{"two of three", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				ctx := t.Context()
				const keys = 250 // three pages of SCAN on each failing node, and only there
				for i := range keys * tc.failing {
					if ok, err := mems[i/keys].Acquire(ctx, redlock.DefaultKeyPrefix+fmt.Sprintf("r%03d", i%keys), "remnant-value-0123456789", time.Minute); !ok || err != nil {
						t.Fatal(ok, err)
					}
				}
				for i := range tc.failing {
					nodes[i] = secondPageFails{mems[i]}
				}
				c := memClient(t, nodes)
				infos, complete, err := c.Locks(ctx, 0)
				var se *redlock.ScanError
				if complete || !errors.As(err, &se) || !errors.Is(err, redlock.ErrScanIncomplete) || !errors.Is(err, errPage) {
					t.Fatalf("Locks with %d failing node(s) = %d locks, complete %v, %v; want incomplete, a *ScanError", tc.failing, len(infos), complete, err)
				}
				if len(se.Failed) != tc.failing || se.Nodes != 3 || se.Scanned() != 3-tc.failing {
					t.Errorf("ScanError = %d failed of %d nodes (%d scanned); want %d failed of 3", len(se.Failed), se.Nodes, se.Scanned(), tc.failing)
				}
				var ne *redlock.NodeError
				if !errors.As(se.Failed[0], &ne) || ne.Node != "m1" {
					t.Errorf("failed[0] = %v; want the NodeError of m1", se.Failed[0])
				}
				if len(infos) != 100 {
					t.Errorf("Locks listed %d; want the 100 of the first page", len(infos))
				}
			})
		})
	}
}
