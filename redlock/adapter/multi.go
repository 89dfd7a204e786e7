package adapter

import (
	"context"
	"time"
)

// MultiNode is an optional capability of a Node: a set of lock keys
// acquired, extended and released as one lock, each operation one atomic
// step on the node (one Lua script on Redis), with fencing tokens for the
// set (R18, as FencingNode: one token for the set). redlock.Client.LockAll
// needs every node to have it. On one node a set is held by a value only
// when every key of the set holds it: a partly held set is not held.
//
// The keys of a set are distinct; the client sends them sorted.
// fenceKeys[i] is the fence key of the resource locked under keys[i].
type MultiNode interface {
	Node
	// AcquireAll sets every key of keys to value with an expiry of ttl
	// only if none of them exists, atomically (R3 for a set): either all
	// are set or none is. On a node that is also an RWNode, a key that
	// holds only waiting writers' marks and no live reader counts as
	// free, as for a writer's acquisition (WAcquire): a set waiting
	// behind readers leaves such marks. It reports whether they were
	// set; false with a nil error means at least one key is held.
	AcquireAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error)
	// ReleaseAll deletes every key of keys that holds value, atomically
	// (R5 for a set), and, when announce is set, announces the release of
	// each deleted key as HandoffNode.ReleaseAnnounce does, in the same
	// step. It reports whether every key held value (and so the whole
	// set was deleted); the keys that held value are deleted either way.
	ReleaseAll(ctx context.Context, keys []string, value string, announce bool) (bool, error)
	// ExtendAll resets the expiry of every key of keys to ttl only if
	// every one of them holds value, atomically (R17 for a set); otherwise
	// it changes nothing, so that the keys of a set this node no longer
	// holds expire on their own. It never creates a key. It reports
	// whether the expiries were reset.
	ExtendAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error)
	// RestoreAll sets every key of keys to value with an expiry of ttl
	// only if each of them is missing or holds value already,
	// atomically; otherwise it changes nothing, and a key of any other
	// value is never overwritten. It reports whether the keys were set.
	// It is the restore of a lock's extension (redlock: an extension
	// restores the keys of the nodes that forgot them): a node that lost
	// part of a set (one master of a Redis Cluster restarted) holds the
	// rest, which AcquireAll refuses and ExtendAll does not extend. On a
	// node that is a Redis Cluster it is atomic per hash slot, as
	// AcquireAll is, and a slot that refuses leaves the others set.
	RestoreAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error)
	// AcquireAllFenced is AcquireAll that, in the same atomic step and
	// only when it set the keys, also reads the largest fence value stored
	// under fenceKeys (a missing fence key reads as 0). It reports whether
	// the keys were set and, if so, that fence value.
	AcquireAllFenced(ctx context.Context, keys, fenceKeys []string, value string, ttl time.Duration) (ok bool, fence uint64, err error)
	// RaiseFences sets the fence value under every key of fenceKeys to
	// token, with an expiry of retention (0: none), only if every key of
	// keys still holds value and every fence is below token, atomically;
	// otherwise it changes nothing. It reports whether it set the fences.
	// It never lowers a fence.
	RaiseFences(ctx context.Context, keys, fenceKeys []string, value string, token uint64, retention time.Duration) (bool, error)
}

// The operations of a MultiNode, for AsyncNode.Start (ops 16 to 31 are
// reserved for sets). Request.Keys holds the set's keys; Request.Key is
// not used.
const (
	// OpAcquireAll is MultiNode.AcquireAll.
	OpAcquireAll Op = 16
	// OpReleaseAll is MultiNode.ReleaseAll without announcement.
	OpReleaseAll Op = 17
	// OpReleaseAllAnnounce is MultiNode.ReleaseAll with announcement.
	OpReleaseAllAnnounce Op = 18
	// OpExtendAll is MultiNode.ExtendAll.
	OpExtendAll Op = 19
)

// IsMulti reports whether op is an operation on a set of keys
// (Request.Keys), one of a MultiNode's.
func (op Op) IsMulti() bool { return op >= 16 && op <= 31 }

// multiString names the operations of a MultiNode, "" for any other.
func (op Op) multiString() string {
	switch op {
	case OpAcquireAll:
		return "acquire-all"
	case OpReleaseAll:
		return "release-all"
	case OpReleaseAllAnnounce:
		return "release-all-announce"
	case OpExtendAll:
		return "extend-all"
	}
	return ""
}
