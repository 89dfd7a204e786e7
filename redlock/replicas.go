package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"dlm/redlock/adapter"
)

// ErrPromotableReplica is wrapped (with ErrInvalid) by the error of New
// when a node that is a Redis Cluster has a replica that may promote itself
// (cluster-replica-no-failover not set on it); a running client, which
// reads its nodes' replicas again every 2 s while it locks, counts such a
// cluster node, and a node that is a plain master with a replica (which
// Sentinel or an operator may promote, with the same loss), as a failed
// node, and its error wraps ErrPromotableReplica for every lock and
// extension when that leaves no quorum (see CheckNodes).
//
// Why such a replica is refused, whatever cluster-node-timeout says:
// replication is asynchronous, so a replica holds the master's lock keys
// only some time after the master granted them. A replica promotes itself
// once its master was unreachable from the cluster for the node timeout,
// and a master cut from the rest of its cluster (its cluster bus and its
// replication) while clients still reach it keeps granting locks until
// that same node timeout, none of which reach the replica: promoted a few
// hundred milliseconds to seconds later, it serves the slots without
// those keys, within their ttl, and a second client can acquire a lock
// that the first still holds. No node timeout orders the promotion
// after the expiry of every lock the master granted, so the only
// failovers that keep locks are made by hand, after the old master has
// stopped and the largest ttl has passed (docs/operations.md); replicas
// with cluster-replica-no-failover yes allow exactly those.
var ErrPromotableReplica = errors.New("redlock: node has a replica that may be promoted")

// WithPromotableReplicas makes New accept nodes that are Redis Clusters
// with replicas that may promote themselves, and the locks accept plain
// masters with replicas (ErrPromotableReplica says why they are refused
// by default). A promotion then makes the node forget
// the last locks of its master's slots, like a restart without
// persistence: safe only if the other nodes make a quorum without it
// (WithByzantineNodes, counted among the nodes that may lie). Default
// off: New asks each cluster node that lists its replicas
// (adapter.ClusterNode) and refuses it when one may promote itself.
func WithPromotableReplicas() Option {
	return clientOption(func(o *clientOptions) { o.promotable = true })
}

// replicaCheckTimeout is the least time New waits for a cluster node's list
// of replicas: the first request of a cluster client also learns the
// cluster's slot map, so a loaded machine may take more than the node
// timeout. A node that does not answer in time is not refused by New: the
// client's next reading of the facts (readNode) asks it again.
const replicaCheckTimeout = 2 * time.Second

// checkReplicas refuses the cluster nodes whose replicas may promote
// themselves (New), asking every such node at once. A cluster node's
// replicas are told by any of its servers, and the adapters take the
// first answer (adapter.ClusterNode), so one hung master of a cluster
// node does not hold New up: only a node none of whose servers answers
// does, up to the bound above.
func (o clientOptions) checkReplicas(nodes []Node, names []string) error {
	if o.promotable {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(o.nodeTimeout, replicaCheckTimeout))
	defer cancel()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		rn, ok := n.(adapter.ClusterNode)
		if !ok || !rn.Cluster() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps, err := rn.Replicas(ctx)
			if err != nil {
				return // unseen: not refused
			}
			errs[i] = promotableError(names[i], reps)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// promotableError is the error of New for node's replicas, or nil when
// none may promote itself. It names each such replica with its master, as
// the cluster lists them, and says what the operator is to do on each.
func promotableError(node string, reps []adapter.Replica) error {
	var bad []string
	for _, r := range reps {
		if !r.Promotable {
			continue
		}
		if r.Master == "" {
			// The cluster lists the replica without a master it knows:
			// one that joined a moment ago, or whose master was removed.
			bad = append(bad, fmt.Sprintf("replica %s (of a master the cluster does not list yet)", r.Addr))
			continue
		}
		bad = append(bad, fmt.Sprintf("replica %s of master %s", r.Addr, r.Master))
	}
	if len(bad) == 0 {
		return nil
	}
	what := "it"
	if len(bad) > 1 {
		what = "each of them"
	}
	return promotablef("node %q: %s may promote itself, possibly without its master's last lock keys (replication is asynchronous; a master cut from its cluster keeps granting locks until the node timeout, whatever the node timeout); on %s, run CONFIG SET cluster-replica-no-failover yes and put cluster-replica-no-failover yes in its configuration file, and fail over only by hand, once the old master has stopped and the largest ttl has passed (docs/operations.md); or remove the replicas, or accept the risk with WithPromotableReplicas (dlm: --promotable-replicas)",
		node, strings.Join(bad, ", "), what)
}
