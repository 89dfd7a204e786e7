package goredis

import (
	"context"

	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

// Replicas returns the replicas of the cluster's masters as the cluster
// reports them (adapter.ClusterNode); none when the node is not a cluster.
func (n *Node) Replicas(ctx context.Context) ([]adapter.Replica, error) {
	if n.cluster == nil {
		return nil, nil
	}
	txt, err := n.cluster.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	return scripts.ClusterReplicas(txt), nil
}
