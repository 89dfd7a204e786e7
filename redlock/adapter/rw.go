package adapter

import (
	"context"
	"time"
)

// RWNode is an optional capability of a Node: the per-node steps of
// read-write locks (redlock's RLock and WLock), each one atomic step on the
// node (one Lua script on Redis, redlock/scripts/rw.lua). A client refuses
// read-write locks over nodes that lack it.
//
// On the node, a writer holds the lock key as a string, exactly as Acquire
// sets it (R3), so that a plain lock and a writer exclude each other and
// Release and Extend serve writers. Readers hold the same key as a hash of
// reader values to expiries on the node's own clock; the key's expiry is
// the latest of them, and every step forgets the readers whose expiry
// passed. A writer that finds readers may leave a waiting mark (its waiter
// id, with an expiry) in the same hash; no reader joins while a mark is
// alive (writer preference). So on every node the key is held by one
// writer or plain lock, or by readers, never both (R1.1 per node).
//
// Node's Release, Extend and the other capabilities' scripts must treat a
// key held by readers as held by another value: false, never an error.
type RWNode interface {
	Node
	// RAcquire adds a reader with value and an expiry of ttl when key is
	// absent or held by readers and no writer waits. It reports whether the
	// reader was added.
	RAcquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// RRelease removes the reader with value, atomically. It reports
	// whether that reader held key (it was there and had not expired).
	RRelease(ctx context.Context, key, value string) (bool, error)
	// RExtend resets the expiry of the reader with value to ttl when it
	// still holds key (R17). It never adds a reader.
	RExtend(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// WAcquire sets key to value with an expiry of ttl when key is absent
	// or held by no live reader (only waiting marks, which it drops), as
	// Acquire does. Otherwise, when readers hold key and waiter is not
	// empty, it leaves or refreshes waiter's mark, with an expiry of ttl,
	// so that no new reader joins. It reports whether it set key.
	WAcquire(ctx context.Context, key, value, waiter string, ttl time.Duration) (bool, error)
	// WUnwait removes waiter's mark from key. It reports whether a live
	// mark was removed.
	WUnwait(ctx context.Context, key, waiter string) (bool, error)
	// WMark leaves or refreshes waiter's mark, with an expiry of ttl,
	// where live readers hold key, as WAcquire does, without acquiring:
	// the waiting mark of a plain lock (Acquire) that readers keep out,
	// so that new readers do not starve it. It reports whether it left
	// the mark.
	WMark(ctx context.Context, key, waiter string, ttl time.Duration) (bool, error)
	// WAcquireFenced is WAcquire that, in the same atomic step and only
	// when it set key, also reads the fence value stored under fenceKey
	// (R18 phase 1, as FencingNode.AcquireFenced): a writer of a client
	// with fencing gets a token like a plain lock. It reports whether key
	// was set and, if so, the fence value (0 when there is none).
	WAcquireFenced(ctx context.Context, key, fenceKey, value, waiter string, ttl time.Duration) (ok bool, fence uint64, err error)
}

// The operations of RWNode in a Request (32..47 are read-write locks').
// They run by RWNode's blocking methods; Request.Waiter carries the waiter
// of OpWAcquire and OpWUnwait.
const (
	// OpRAcquire is RWNode.RAcquire.
	OpRAcquire Op = 32
	// OpRRelease is RWNode.RRelease.
	OpRRelease Op = 33
	// OpRExtend is RWNode.RExtend.
	OpRExtend Op = 34
	// OpWAcquire is RWNode.WAcquire.
	OpWAcquire Op = 35
	// OpWUnwait is RWNode.WUnwait (Request.Value is unused).
	OpWUnwait Op = 36
	// OpWMark is RWNode.WMark (Request.Value is unused).
	OpWMark Op = 37
)

// rwName returns the name of one of RWNode's operations.
func rwName(op Op) (string, bool) {
	switch op {
	case OpRAcquire:
		return "read-acquire", true
	case OpRRelease:
		return "read-release", true
	case OpRExtend:
		return "read-extend", true
	case OpWAcquire:
		return "write-acquire", true
	case OpWUnwait:
		return "write-unwait", true
	case OpWMark:
		return "write-mark", true
	}
	return "", false
}
