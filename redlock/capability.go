package redlock

import (
	"context"
	"time"
)

// FencingNode is an optional capability of a Node (found by type assertion,
// like io.Closer): the two atomic steps of fencing tokens kept as a quorum
// max-register (R18; see the package documentation). A client built with
// WithFencing refuses nodes that lack it. Each method must be one atomic
// step on the node (one Lua script on Redis).
//
// A fence value is a decimal uint64 stored under fenceKey, separate from the
// lock key: it survives the lock key's expiry and release. A missing fence
// key reads as 0.
type FencingNode interface {
	Node
	// AcquireFenced is Acquire (R3: SET key value NX PX ttl) that, in the
	// same atomic step and only when it set the key, also reads the fence
	// value stored under fenceKey. It reports whether the key was set and,
	// if so, the fence value (0 when there is none).
	AcquireFenced(ctx context.Context, key, fenceKey, value string, ttl time.Duration) (ok bool, fence uint64, err error)
	// RaiseFence sets the fence value under fenceKey to token, with an
	// expiry of retention (0: none), only if key still holds value and the
	// fence is below token (a missing fence counts as 0), atomically. It
	// reports whether it set the fence. Refusing a token that is not above
	// the fence is what makes every two granted tokens differ (see the
	// package documentation); it never lowers a fence.
	RaiseFence(ctx context.Context, key, fenceKey, value string, token uint64, retention time.Duration) (bool, error)
}
