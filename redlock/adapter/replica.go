package adapter

import "context"

// Replica is a replica of one master of a node that is a Redis Cluster, as
// the cluster reports it (CLUSTER NODES).
type Replica struct {
	// Addr is the replica's address, host:port.
	Addr string
	// Master is its master's address, host:port ("" when the cluster
	// does not know it).
	Master string
	// Promotable reports whether the replica may take its master's slots
	// over on its own: cluster-replica-no-failover is not set on it.
	Promotable bool
}

// ReplicaNode is an optional capability of a ClusterNode: it lists the
// replicas of the node's masters, so that a client can refuse a node whose
// replicas may promote themselves (redlock.New): replication is
// asynchronous, so a replica promoted while its master still served
// clients, or within a ttl of the master's last grant, may lack lock keys
// the master granted, and two clients may then hold a lock.
type ReplicaNode interface {
	ClusterNode
	// Replicas returns the replicas of the cluster's masters, in the
	// order the cluster lists them; none for a node that is not a
	// cluster.
	Replicas(ctx context.Context) ([]Replica, error)
}
