package redlocktest

import (
	"context"
	"strconv"
	"time"

	"dlm/redlock/adapter"
)

// The operations of the fence floor (adapter.FenceFloorNode).
const (
	opAcquireFencedFloor adapter.Op = 236 + iota
	opRaiseFenceRepair
)

// FloorNode is a MemNode with the restart repair of fencing
// (adapter.FenceFloorNode), as the Redis adapters have it: a client with
// fencing then keeps tokens increasing across Forget and Restart. A plain
// MemNode lacks it, so that its tokens count grants from 1 in tests and
// examples; the floor makes the first token of a new node set the wall
// clock in microseconds.
type FloorNode struct{ *MemNode }

var _ adapter.FenceFloorNode = FloorNode{}

// WithFloor returns n with the restart repair of fencing (FloorNode).
func (n *MemNode) WithFloor() FloorNode { return FloorNode{n} }

// AcquireFencedFloor is AcquireFenced that also reads the floor key
// (adapter.FenceFloorNode).
func (n FloorNode) AcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value string, ttl time.Duration) (bool, uint64, bool, error) {
	r := n.call(&memCall{ctx: ctx, fenceKey: fenceKey, floorKey: floorKey,
		req: adapter.Request{Op: opAcquireFencedFloor, Key: key, Value: value, TTL: ttl}})
	return r.ok, r.fence, !r.lost, r.err
}

// RaiseFenceRepair is RaiseFence that also sets the missing floor key to
// token when it sets the fence (adapter.FenceFloorNode).
func (n FloorNode) RaiseFenceRepair(ctx context.Context, key, fenceKey, floorKey, value string, token uint64, retention time.Duration) (bool, error) {
	r := n.call(&memCall{ctx: ctx, fenceKey: fenceKey, floorKey: floorKey, token: token, retention: retention,
		req: adapter.Request{Op: opRaiseFenceRepair, Key: key, Value: value}})
	return r.ok, r.err
}

// applyFloor runs the operations of the fence floor, as the fencing
// scripts do with their third key: AcquireFenced's or RaiseFence's step
// (counted once among the applied operations), then the floor's. Called
// with n.mu held.
func (n *MemNode) applyFloor(c *memCall, now time.Time, lieAll bool) memResult {
	acquire := c.req.Op == opAcquireFencedFloor
	if acquire {
		c.req.Op = opAcquireFenced
	} else {
		c.req.Op = opRaiseFence
	}
	n.applied.Add(-1)
	res := n.applyOp(c)
	_, kept := n.live(c.floorKey, now)
	switch {
	case !res.ok || res.err != nil:
	case acquire && !kept:
		res.lost = true
	case acquire:
		floor, err := n.fenceLocked(c.floorKey, now)
		res.fence, res.err = max(res.fence, floor), err
	case !kept && !lieAll:
		// The floor keeps the retention as its expiry, as the fencing
		// scripts set it.
		var exp time.Time
		if c.retention > 0 {
			exp = now.Add(c.retention)
		}
		n.keys[c.floorKey] = memEntry{value: strconv.FormatUint(c.token, 10), expires: exp}
	}
	return res
}
