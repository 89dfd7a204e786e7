package redlock_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestLocksWithoutBound: Locks with the largest limit lists every lock
// and says the list is complete. Before the fix its stop rule compared
// the keys seen with 10*limit, which overflowed: with math.MaxInt the list
// was cut after the first SCAN batch ("more resources than --limit
// 9000000000000000000" from dlm status). Found by review.
func TestLocksWithoutBound(t *testing.T) {
	nodes, mems := redlocktest.NewMemNodes(3)
	const n = 350
	for _, m := range mems {
		for i := range n {
			if _, err := m.Acquire(context.Background(), fmt.Sprintf("%sr%03d", redlock.DefaultKeyPrefix, i), "a-value-of-no-one-0123456789", time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, limit := range []int{math.MaxInt, math.MaxInt / 10, n} {
		infos, complete, err := c.Locks(context.Background(), limit)
		if err != nil || !complete || len(infos) != n {
			t.Errorf("Locks(limit %d) = %d locks, complete %v, %v; want %d, true, nil", limit, len(infos), complete, err, n)
		}
	}
}
