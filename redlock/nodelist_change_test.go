package redlock_test

import (
	"errors"
	"testing"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Changing a node list while clients of both lists run (docs/operations.md,
// "Changing the set of nodes"): replacing P3 by C directly lets a client of
// the new list (P1, P2, C) take a resource that a client of the old list
// holds on P1 and P3 only; going through the joint list (P1, P2, P3, C,
// quorum 3) does not, at either step.
func TestNodeListChangeThroughJointList(t *testing.T) {
	_, m := redlocktest.NewMemNodes(4) // P1, P2, P3, C
	list := func(idx ...int) []redlock.Node {
		out := make([]redlock.Node, len(idx))
		for i, j := range idx {
			out[i] = m[j]
		}
		return out
	}
	old, joint, next := memClient(t, list(0, 1, 2)), memClient(t, list(0, 1, 2, 3)), memClient(t, list(0, 1, 3))
	ctx := t.Context()
	// holdOn has c lock resource on every node of its list but down.
	holdOn := func(c *redlock.Client, resource string, down int) {
		t.Helper()
		m[down].SetDown(true)
		defer m[down].SetDown(false)
		if _, err := c.TryLock(ctx, resource); err != nil {
			t.Fatalf("TryLock %s with node %d down: %v", resource, down, err)
		}
	}
	holdOn(old, "r", 1) // P1 and P3
	if _, err := joint.TryLock(ctx, "r"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("the joint list took r, held by the old list on P1 and P3: %v", err)
	}
	if _, err := next.TryLock(ctx, "r"); err != nil {
		t.Errorf("the direct replacement's premise: the new list could not take r (%v); want it taken, two holders", err)
	}
	holdOn(joint, "s", 0) // P2, P3 and C
	if _, err := next.TryLock(ctx, "s"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("the new list took s, held by the joint list on P2, P3 and C: %v", err)
	}
	holdOn(next, "u", 1) // P1 and C
	if _, err := joint.TryLock(ctx, "u"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("the joint list took u, held by the new list on P1 and C: %v", err)
	}
}
