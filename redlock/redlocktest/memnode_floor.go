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
	opWAcquireFencedFloor
	opAcquireAllFencedFloor
	opRaiseFencesRepair
)

// floorOp returns the operation that op, an operation of the fence floor,
// adds the floor to, and whether op reads the floor (an acquisition)
// rather than repairs it (a raise).
func floorOp(op adapter.Op) (base adapter.Op, acquire bool) {
	switch op {
	case opAcquireFencedFloor:
		return opAcquireFenced, true
	case opWAcquireFencedFloor:
		return opWAcquireFenced, true
	case opAcquireAllFencedFloor:
		return opAcquireAllFenced, true
	case opRaiseFenceRepair:
		return opRaiseFence, false
	}
	return opRaiseFences, false
}

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

// WAcquireFencedFloor is WAcquireFenced that also reads the floor key
// (adapter.FenceFloorNode).
func (n FloorNode) WAcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value, waiter string, ttl time.Duration) (bool, uint64, bool, error) {
	r := n.call(&memCall{ctx: ctx, fenceKey: fenceKey, floorKey: floorKey,
		req: adapter.Request{Op: opWAcquireFencedFloor, Key: key, Value: value, TTL: ttl, Waiter: waiter}})
	return r.ok, r.fence, !r.lost, r.err
}

// AcquireAllFencedFloor is AcquireAllFenced that also reads the floor
// keys (adapter.FenceFloorNode).
func (n FloorNode) AcquireAllFencedFloor(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, ttl time.Duration) (bool, uint64, bool, error) {
	r := n.call(&memCall{ctx: ctx,
		req: adapter.Request{Op: opAcquireAllFencedFloor, Keys: append(joinKeys(keys, fenceKeys), floorKeys...), Value: value, TTL: ttl}})
	return r.ok, r.fence, !r.lost, r.err
}

// RaiseFencesRepair is RaiseFences that also sets the missing floor keys
// to token when it sets the fences (adapter.FenceFloorNode).
func (n FloorNode) RaiseFencesRepair(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	r := n.call(&memCall{ctx: ctx, token: token, retention: retention,
		req: adapter.Request{Op: opRaiseFencesRepair, Keys: append(joinKeys(keys, fenceKeys), floorKeys...), Value: value}})
	return r.ok, r.err
}

// applyFloor runs the operations of the fence floor, as the fencing
// scripts do with their floor keys: the step they add the floor to
// (counted once among the applied operations), then the floor's. Called
// with n.mu held.
func (n *MemNode) applyFloor(c *memCall, now time.Time, lieAll bool) memResult {
	base, acquire := floorOp(c.req.Op)
	c.req.Op = base
	floors := []string{c.floorKey}
	if c.req.Keys != nil {
		// A set's: its lock keys, fence keys, then floor keys.
		k := len(c.req.Keys) / 3
		floors, c.req.Keys = c.req.Keys[2*k:], c.req.Keys[:2*k]
	}
	n.applied.Add(-1)
	res := n.applyOp(c)
	if !res.ok || res.err != nil {
		return res
	}
	for _, fk := range floors {
		_, kept := n.live(fk, now)
		switch {
		case acquire && !kept:
			res.lost = true
		case acquire:
			floor, err := n.fenceLocked(fk, now)
			res.fence = max(res.fence, floor)
			if err != nil {
				res.err = err
			}
		case lieAll:
		case !kept:
			// The floor keeps the retention as its expiry, as the
			// fencing scripts set it.
			var exp time.Time
			if c.retention > 0 {
				exp = now.Add(c.retention)
			}
			n.keys[fk] = memEntry{value: strconv.FormatUint(c.token, 10), expires: exp}
		case c.retention > 0:
			// A kept floor is raised to the token and expires with the
			// fence (floor.lua's floor_mark): once the fence expired,
			// the resource's fence reads as the floor.
			floor, _ := n.fenceLocked(fk, now) // not a number: overwritten, as the script does
			n.keys[fk] = memEntry{value: strconv.FormatUint(max(floor, c.token), 10), expires: now.Add(c.retention)}
		}
	}
	return res
}
