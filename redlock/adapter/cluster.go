package adapter

// ClusterNode is an optional capability of a Node: a node that is a Redis
// Cluster, whose keyspace is spread over hash slots on several masters, so
// that every key of one atomic step (one script) must be in one slot. A
// client over any node whose Cluster reports true builds its keys with
// hash tags (redlock.WithHashTags): the lock key, fence key and record key
// of a resource, and so its read-write marks, which live in the lock key,
// share a slot. A set of resources (MultiNode) may still span slots; the
// node then steps each slot's keys on their own (see redlock/goredis and
// redlock/rueidis for the argument that the set stays all or nothing).
type ClusterNode interface {
	Node
	// Cluster reports whether the node is a Redis Cluster.
	Cluster() bool
}
