package scripts

import (
	"strings"

	"dlm/redlock/adapter"
)

// ClusterReplicas returns the replicas listed in the reply of CLUSTER NODES,
// each with its master's address and whether it may promote itself (no
// nofailover flag, which cluster-replica-no-failover yes sets). A replica
// flagged as failed is listed too: it may come back.
func ClusterReplicas(nodes string) []adapter.Replica {
	addr := map[string]string{} // node id -> host:port
	type rep struct {
		r      adapter.Replica
		master string
	}
	var reps []rep
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		a, _, _ := strings.Cut(f[1], "@")
		addr[f[0]] = a
		if hasFlag(f[2], "slave") {
			reps = append(reps, rep{adapter.Replica{Addr: a, Promotable: !hasFlag(f[2], "nofailover")}, f[3]})
		}
	}
	out := make([]adapter.Replica, len(reps))
	for i, r := range reps {
		out[i] = r.r
		out[i].Master = addr[r.master]
	}
	return out
}
