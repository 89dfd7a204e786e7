package adapter

import (
	"context"
	"time"
)

// FenceFloorNode is an optional capability of a FencingNode: the repair of
// a node that lost its fence values (a restart without persistence, R16.1),
// so that tokens do not go down after it (redlock/fencing.go argues it).
// A node keeps a floor key (one, or one per resource with hash tags): a
// client sets it, and it expires only with the fence retention, so its
// absence tells that the node is new or lost every key since a client last
// marked it. A node that can tell that it lost writes in another way (a
// Redis server whose replication id changed: a restart, or a replica
// promoted without its master's last writes) reports the floor as not kept
// too. Each method must be one atomic step on the node (one Lua
// script on Redis: the fencing scripts with the floor key as a third key).
//
// A client built with redlock.WithFencing uses the methods for every
// fenced lock on each node that has them: the first two for a lock on one
// resource, a writer's acquisition (RWNode) for a write lock, the set's
// (MultiNode) for a set; it uses the methods without the floor on the
// others. A node that is no RWNode or no MultiNode is never asked for the
// writer's or the set's: the client refuses those locks over it.
type FenceFloorNode interface {
	FencingNode
	// AcquireFencedFloor is AcquireFenced that also reads the floor key:
	// when it set the key, fence is the larger of the resource's fence
	// value and the floor (a missing fence or floor counts as 0), and kept
	// reports whether the floor key exists and the node kept its writes
	// since it was set. When it did not set the key,
	// fence is 0 and kept is true.
	AcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value string, ttl time.Duration) (ok bool, fence uint64, kept bool, err error)
	// RaiseFenceRepair is RaiseFence that, when it sets the fence, also
	// sets the floor key to token if the floor key is missing or not kept
	// (AcquireFencedFloor), with the retention as its expiry (0: none), in
	// the same atomic step; with a retention, a kept floor key is raised
	// to token (when below) and given the retention as its expiry, as the
	// fence is. The client calls it only with a token above every earlier
	// token of every resource: after a loss, and for every grant of a
	// client with a fence retention.
	RaiseFenceRepair(ctx context.Context, key, fenceKey, floorKey, value string, token uint64, retention time.Duration) (bool, error)
	// WAcquireFencedFloor is RWNode.WAcquireFenced that also reads the
	// floor key, as AcquireFencedFloor does. A writer's key is a plain
	// lock key, so its phase 2 is RaiseFenceRepair.
	WAcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value, waiter string, ttl time.Duration) (ok bool, fence uint64, kept bool, err error)
	// AcquireAllFencedFloor is MultiNode.AcquireAllFenced that also reads
	// the floor keys (floorKeys[i] the floor of the resource of keys[i];
	// they may repeat): fence is the largest of the fences and the
	// floors, kept reports whether every floor key was kept.
	AcquireAllFencedFloor(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, ttl time.Duration) (ok bool, fence uint64, kept bool, err error)
	// RaiseFencesRepair is MultiNode.RaiseFences that, when it sets the
	// fences, also sets every floor key of floorKeys as RaiseFenceRepair
	// does.
	RaiseFencesRepair(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, token uint64, retention time.Duration) (bool, error)
}
