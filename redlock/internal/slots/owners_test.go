package slots

import (
	"slices"
	"testing"
)

// Owners takes each slot's master from the claim with the highest config
// epoch, whichever server's map holds it: the map of a master cut from its
// cluster, which still claims the slots its replica took over, loses.
func TestOwners(t *testing.T) {
	// m1 was cut; its replica r1 took its slots over with epoch 4.
	const cut = `m1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
m2 127.0.0.1:7002@17002 master,fail? - 0 0 2 connected 5461-10921
m3 127.0.0.1:7003@17003 master,fail? - 0 0 3 connected 10922-16383
r1 127.0.0.1:7004@17004 slave,fail? m1 0 0 1 connected
r3 127.0.0.1:7006@17006 slave m3 0 0 3 connected
`
	const healthy = `m2 127.0.0.1:7002@17002 myself,master - 0 0 2 connected 5461-10921
m1 127.0.0.1:7001@17001 master,fail - 0 0 1 connected
m3 127.0.0.1:7003@17003 master - 0 0 3 connected 10922-16383 [10922->-m2]
r1 127.0.0.1:7004@17004 master - 0 0 4 connected 0-5460
r3 127.0.0.1:7006@17006 slave m3 0 0 3 connected
`
	want := []Shard{
		{Start: 0, End: 5460, Master: "127.0.0.1:7004"},
		{Start: 5461, End: 10921, Master: "127.0.0.1:7002"},
		{Start: 10922, End: 16383, Master: "127.0.0.1:7003", Replicas: []string{"127.0.0.1:7006"}},
	}
	tests := []struct {
		name  string
		views map[string]string
		want  []Shard
	}{
		{"cut and healthy", map[string]string{"127.0.0.1:7001": cut, "127.0.0.1:7002": healthy}, want},
		{"healthy only", map[string]string{"127.0.0.1:7002": healthy}, want},
		{"cut only", map[string]string{"127.0.0.1:7001": cut}, []Shard{
			{Start: 0, End: 5460, Master: "127.0.0.1:7001", Replicas: []string{"127.0.0.1:7004"}},
			{Start: 5461, End: 10921, Master: "127.0.0.1:7002"},
			{Start: 10922, End: 16383, Master: "127.0.0.1:7003", Replicas: []string{"127.0.0.1:7006"}},
		}},
		{"a lone server without its own address", map[string]string{"10.0.0.9:7000": "a :7000@17000 myself,master - 0 0 0 connected 0-16383\n"},
			[]Shard{{Start: 0, End: 16383, Master: "10.0.0.9:7000"}}},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Owners(tt.views)
			if !slices.EqualFunc(got, tt.want, func(a, b Shard) bool {
				return a.Start == b.Start && a.End == b.End && a.Master == b.Master && slices.Equal(a.Replicas, b.Replicas)
			}) {
				t.Errorf("Owners = %+v, want %+v", got, tt.want)
			}
			for _, s := range tt.want {
				if o := Owner(got, s.End); o != s.Master {
					t.Errorf("Owner(slot %d) = %q, want %q", s.End, o, s.Master)
				}
			}
		})
	}
}

// Merge keeps a slot's claim with the highest config epoch it saw, even
// when a later read reaches only a stale server; a higher epoch (a
// failover, a slot imported) still moves the slot.
func TestMerge(t *testing.T) {
	// m1 came back with its old map (epoch 1) after r1 took its slots
	// with epoch 4.
	const stale = `m1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-8191
m2 127.0.0.1:7002@17002 master - 0 0 2 connected 8192-16383
r1 127.0.0.1:7004@17004 slave m1 0 0 1 connected
`
	const promoted = `r1 127.0.0.1:7004@17004 myself,master - 0 0 4 connected 0-8191
m2 127.0.0.1:7002@17002 master - 0 0 2 connected 8192-16383
m1 127.0.0.1:7001@17001 master,fail - 0 0 1 connected
`
	// m2 imported slot 0 from r1, taking epoch 5.
	const imported = `m2 127.0.0.1:7002@17002 myself,master - 0 0 5 connected 0 8192-16383
r1 127.0.0.1:7004@17004 master - 0 0 4 connected 1-8191
`
	owner := func(shards []Shard, slot int) string { return Owner(shards, slot) }
	m := Merge(nil, map[string]string{"127.0.0.1:7004": promoted})
	if got := owner(m, 0); got != "127.0.0.1:7004" {
		t.Fatalf("after the promotion: Owner(0) = %q, want r1", got)
	}
	m = Merge(m, map[string]string{"127.0.0.1:7001": stale})
	if got := owner(m, 0); got != "127.0.0.1:7004" {
		t.Errorf("after a read of the stale master only: Owner(0) = %q, want r1 (epoch 4 over 1)", got)
	}
	if got := owner(m, 9000); got != "127.0.0.1:7002" {
		t.Errorf("after a read of the stale master only: Owner(9000) = %q, want m2", got)
	}
	m = Merge(m, map[string]string{"127.0.0.1:7002": imported})
	if got := owner(m, 0); got != "127.0.0.1:7002" {
		t.Errorf("after the import: Owner(0) = %q, want m2 (epoch 5)", got)
	}
	if got := owner(m, 1); got != "127.0.0.1:7004" {
		t.Errorf("after the import: Owner(1) = %q, want r1", got)
	}
	m = Merge(m, map[string]string{"127.0.0.1:7001": stale})
	if got := owner(m, 0); got != "127.0.0.1:7002" {
		t.Errorf("after the import and a stale read: Owner(0) = %q, want m2", got)
	}
}

// Servers names every server the maps know an address of, and not the
// ones marked failed: the first answer's servers are asked next.
func TestServers(t *testing.T) {
	views := map[string]string{"10.0.0.1:7001": `m1 :7001@17001 myself,master - 0 0 1 connected 0-8191
m2 10.0.0.2:7002@17002 master - 0 0 2 connected 8192-16383
r1 10.0.0.4:7004@17004 slave m1 0 0 1 connected
r2 10.0.0.5:7005@17005 slave,fail m2 0 0 2 connected
x 10.0.0.6:0@0 master,noaddr - 0 0 0 connected
`}
	want := []string{"10.0.0.1:7001", "10.0.0.2:7002", "10.0.0.4:7004"}
	if got := Servers(views); !slices.Equal(got, want) {
		t.Errorf("Servers = %v, want %v", got, want)
	}
}
