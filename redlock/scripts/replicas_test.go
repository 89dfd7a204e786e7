package scripts

import (
	"slices"
	"testing"

	"dlm/redlock/adapter"
)

// ClusterReplicas reads each replica of CLUSTER NODES with its master's
// address and whether it may promote itself, failed replicas included.
func TestClusterReplicas(t *testing.T) {
	const nodes = `a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-8191
a2 127.0.0.1:7002@17002 master - 0 0 2 connected 8192-16383
r1 127.0.0.1:7003@17003 slave,nofailover a1 0 0 1 connected
r2 127.0.0.1:7004@17004 slave a2 0 0 2 connected
r3 127.0.0.1:7005@17005 slave,fail a2 0 0 2 disconnected
r4 127.0.0.1:7006@17006 slave zz 0 0 2 connected
`
	tests := []struct {
		name  string
		nodes string
		want  []adapter.Replica
	}{
		{"none", "a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-16383\n", nil},
		{"mixed", nodes, []adapter.Replica{
			{Addr: "127.0.0.1:7003", Master: "127.0.0.1:7001"},
			{Addr: "127.0.0.1:7004", Master: "127.0.0.1:7002", Promotable: true},
			{Addr: "127.0.0.1:7005", Master: "127.0.0.1:7002", Promotable: true},
			{Addr: "127.0.0.1:7006", Promotable: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClusterReplicas(tt.nodes); !slices.Equal(got, tt.want) {
				t.Errorf("ClusterReplicas = %+v, want %+v", got, tt.want)
			}
		})
	}
}
