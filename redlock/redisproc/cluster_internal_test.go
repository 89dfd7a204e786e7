package redisproc

import "testing"

// MasterOf names the master a cluster was started with for every slot of
// every master's range, its edges included.
//
// Failed before (slot*M/16384, which rounds the upper edges down): "3
// masters: MasterOf(10922) = 1, want 2 (master 2 was given slots
// 10922-16383)".
func TestMasterOfEveryRangeEdge(t *testing.T) {
	for m := 1; m <= 5; m++ {
		c := &Cluster{masters: make([]*Process, m)}
		for i := range m {
			lo, hi := slotRange(i, m)
			for _, slot := range []int{lo, hi} {
				if got := c.MasterOf(slot); got != i {
					t.Errorf("%d masters: MasterOf(%d) = %d, want %d (master %d was given slots %d-%d)", m, slot, got, i, i, lo, hi)
				}
			}
		}
	}
}
