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

// knowsReplicas holds only when the node's map lists every replica, by
// id, as a replica of its own master.
func TestKnowsReplicas(t *testing.T) {
	replicaOf := map[string]string{"r1": "m1", "r2": "m2"}
	const (
		m1 = "m1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-8191\n"
		m2 = "m2 127.0.0.1:7002@17002 master - 0 0 2 connected 8192-16383\n"
	)
	for _, tc := range []struct {
		name      string
		nodes     string
		replicaOf map[string]string // nil: r1 of m1, r2 of m2
		want      bool
	}{
		{"both replicas known", m1 + m2 +
			"r1 127.0.0.1:7003@17003 slave m1 0 0 1 connected\n" +
			"r2 127.0.0.1:7004@17004 slave m2 0 0 2 connected\n", nil, true},
		{"a replica listed with other flags", m1 + m2 +
			"r1 127.0.0.1:7003@17003 myself,slave m1 0 0 1 connected\n" +
			"r2 127.0.0.1:7004@17004 slave,fail? m2 0 0 2 connected\n", nil, true},
		{"a replica still listed as a master without slots", m1 + m2 +
			"r1 127.0.0.1:7003@17003 master - 0 0 0 connected\n" +
			"r2 127.0.0.1:7004@17004 slave m2 0 0 2 connected\n", nil, false},
		{"a replica of the wrong master", m1 + m2 +
			"r1 127.0.0.1:7003@17003 slave m2 0 0 2 connected\n" +
			"r2 127.0.0.1:7004@17004 slave m2 0 0 2 connected\n", nil, false},
		{"a replica not listed yet", m1 + m2 +
			"r2 127.0.0.1:7004@17004 slave m2 0 0 2 connected\n", nil, false},
		{"an empty reply", "", nil, false},
		{"no replicas to know", m1 + m2, map[string]string{}, true},
	} {
		rs := tc.replicaOf
		if rs == nil {
			rs = replicaOf
		}
		if got := knowsReplicas(tc.nodes, rs); got != tc.want {
			t.Errorf("%s: knowsReplicas = %v, want %v", tc.name, got, tc.want)
		}
	}
}
