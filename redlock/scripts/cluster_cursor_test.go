package scripts

import (
	"slices"
	"testing"
)

// A cluster node's Scan walks every master in turn: the cursor says which
// master and where in it, and a master that is not a live master (a
// replica, a failed one, one with nofailover set is still a master) is
// listed or skipped as CLUSTER NODES says; so is a master that serves no
// slot and moves none (f6: it holds no key, and a cluster client, whose
// map comes from the slots, does not know it).
func TestClusterCursor(t *testing.T) {
	nodes := "a1 127.0.0.1:7002@17002 master - 0 0 2 connected 5461-10922\n" +
		"b2 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n" +
		"c3 127.0.0.1:7003@17003 master,nofailover - 0 0 3 connected 10923-16383\n" +
		"d4 127.0.0.1:7004@17004 slave b2 0 0 1 connected\n" +
		"e5 127.0.0.1:7005@17005 master,fail - 0 0 5 disconnected\n" +
		"f6 127.0.0.1:7006@17006 master - 0 0 6 connected\n" +
		"g7 127.0.0.1:7007@17007 master - 0 0 7 connected [5461-<-a1]\n"
	if got, want := ClusterMasters(nodes), []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7007"}; !slices.Equal(got, want) {
		t.Errorf("ClusterMasters = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		master  int
		next    uint64
		masters int
		want    string
	}{
		{0, 17, 3, "0:17"},
		{0, 0, 3, "1:0"},
		{2, 0, 3, ""},
		{2, 5, 3, "2:5"},
	} {
		got := NextClusterCursor(tt.master, tt.next, tt.masters)
		if got != tt.want {
			t.Errorf("NextClusterCursor(%d, %d, %d) = %q, want %q", tt.master, tt.next, tt.masters, got, tt.want)
		}
		if got == "" {
			continue
		}
		m, c, err := ParseClusterCursor(got)
		if err != nil || (tt.next != 0 && (m != tt.master || c != tt.next)) || (tt.next == 0 && (m != tt.master+1 || c != 0)) {
			t.Errorf("ParseClusterCursor(%q) = %d, %d, %v", got, m, c, err)
		}
	}
	for _, bad := range []string{"x", "1", "-1:0", "1:x", ":"} {
		if _, _, err := ParseClusterCursor(bad); err == nil {
			t.Errorf("ParseClusterCursor(%q) accepted", bad)
		}
	}
}
