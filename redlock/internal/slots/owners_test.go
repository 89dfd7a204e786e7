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
