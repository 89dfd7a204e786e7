package scripts

import "strings"

// Sharded returns src with every PUBLISH of a release announcement made a
// SPUBLISH (sharded pub/sub, Redis 7): for a node that is a Redis Cluster,
// where a PUBLISH reaches every master of the cluster, while a SPUBLISH
// stays on the shard of its channel. A release channel is ChannelPrefix
// followed by the lock key, so with the hash-tagged keys a client hands a
// cluster node it is in the slot of the key, on the master that runs the script.
func Sharded(src string) string {
	return strings.ReplaceAll(src, `redis.call("PUBLISH",`, `redis.call("SPUBLISH",`)
}
