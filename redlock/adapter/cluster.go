package adapter

import "context"

// ClusterNode is an optional capability of a Node: a node that is a Redis
// Cluster, whose keyspace is spread over hash slots on several masters, so
// that every key of one atomic step (one script) must be in one slot, and
// whose masters may have replicas. A client gives a node whose Cluster
// reports true every key with a hash tag (redlock.HashTaggedKey), whether
// or not it was built redlock.WithHashTags, and the keys of its other
// nodes stay as they are: the lock key, fence key and record key of a
// resource, and so its read-write marks, which live in the lock key, share
// a slot. A set of resources
// (MultiNode) may still span slots; the node then steps each slot's keys
// on their own (see redlock/goredis and redlock/rueidis for the argument
// that the set stays all or nothing).
//
// A client asks such a node for its replicas (redlock.New, and every few
// seconds while it locks) and refuses it when one may promote itself: replication is asynchronous, so a replica
// promoted while its master still served clients, or within a ttl of the
// master's last grant, may lack lock keys the master granted, and two
// clients may then hold a lock.
type ClusterNode interface {
	Node
	// Cluster reports whether the node is a Redis Cluster.
	Cluster() bool
	// Replicas returns the replicas of the cluster's masters, in the
	// order the cluster lists them; none for a node that is not a
	// cluster. Any server of the cluster can tell them: the node asks
	// them all and takes the first answer, so that one hung master does
	// not hold it up.
	Replicas(ctx context.Context) ([]Replica, error)
}

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

// MastersNode is an optional capability of a ClusterNode that is a
// FactsNode: its facts can be read master by master, so that a client
// reads each master's facts on its own (one master that does not answer,
// a hung process, leaves the others' facts fresh) and judges a lock on
// the facts of the masters that serve its keys. Without it, a client
// reads a cluster node's facts as one (Connect, Replicas), and one hung
// master holds up every lock that needs the node for its quorum.
type MastersNode interface {
	ClusterNode
	FactsNode
	// Masters returns the addresses (host:port) of the cluster's
	// masters as the node's last reading of the cluster's map (Replicas,
	// Connect) named them, without a request; none before one.
	Masters() []string
	// MasterOf returns the address of the master that serves key's slot
	// as the node's last reading of the cluster's map named it, without
	// a request; "" when it knows none.
	MasterOf(key string) string
	// ConnectMaster is Connect for the master at addr only (one of
	// Masters), bounded by ctx.
	ConnectMaster(ctx context.Context, addr string) error
}
