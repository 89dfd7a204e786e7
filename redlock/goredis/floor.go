package goredis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/slots"
)

var _ adapter.FenceFloorNode = (*Node)(nil)

// AcquireFencedFloor is AcquireFenced that also reads the node's fence
// floor (adapter.FenceFloorNode): the restart repair of redlock/fencing.go.
func (n *Node) AcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value string, ttl time.Duration) (bool, uint64, bool, error) {
	res, err := n.acquireFenced.Run(ctx, n.scripter(), []string{key, fenceKey, floorKey}, value, ttl.Milliseconds()).Slice()
	return flooredReply(res, err, fmt.Sprintf("%q or %q", fenceKey, floorKey))
}

// WAcquireFencedFloor is WAcquireFenced that also reads the node's fence
// floor (adapter.FenceFloorNode).
func (n *Node) WAcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value, waiter string, ttl time.Duration) (bool, uint64, bool, error) {
	res, err := n.rw.Run(ctx, n.scripter(), []string{key, fenceKey, floorKey}, "wacquirefenced", value, ms(ttl), waiter).Slice()
	return flooredReply(res, err, fmt.Sprintf("%q or %q", fenceKey, floorKey))
}

// AcquireAllFencedFloor is AcquireAllFenced that also reads the node's
// fence floors (adapter.FenceFloorNode).
func (n *Node) AcquireAllFencedFloor(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, ttl time.Duration) (bool, uint64, bool, error) {
	floorOf := slots.NewFloors(fenceKeys, floorKeys)
	var mu sync.Mutex
	kept := true
	if done, ok, fence, err := n.split(ctx, keys, fenceKeys, value, true, func(keys, fenceKeys []string) (bool, uint64, error) {
		ok, fence, k, err := n.AcquireAllFencedFloor(ctx, keys, fenceKeys, floorOf.Of(fenceKeys), value, ttl)
		mu.Lock()
		kept = kept && k
		mu.Unlock()
		return ok, fence, err
	}); done { // cluster.go
		mu.Lock()
		defer mu.Unlock()
		return ok, fence, kept, err
	}
	res, err := n.multi.acquireFenced.Run(ctx, n.scripter(), joinKeys(keys, fenceKeys, floorKeys...), value, ttl.Milliseconds(), len(keys)).Slice()
	return flooredReply(res, err, fmt.Sprintf("one of %q or %q", fenceKeys, floorKeys))
}

// RaiseFencesRepair is RaiseFences that, when it sets the fences, also
// sets the missing floor keys to token (adapter.FenceFloorNode).
func (n *Node) RaiseFencesRepair(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	floorOf := slots.NewFloors(fenceKeys, floorKeys)
	if done, ok, _, err := n.split(ctx, keys, fenceKeys, value, false, func(keys, fenceKeys []string) (bool, uint64, error) {
		ok, err := n.RaiseFencesRepair(ctx, keys, fenceKeys, floorOf.Of(fenceKeys), value, token, retention)
		return ok, 0, err
	}); done { // cluster.go
		return ok, err
	}
	v, err := n.multi.raiseFences.Run(ctx, n.scripter(), joinKeys(keys, fenceKeys, floorKeys...), value, strconv.FormatUint(token, 10), retention.Milliseconds(), len(keys)).Int64()
	return v == 1, err
}

// RaiseFenceRepair is RaiseFence that, when it sets the fence, also sets
// the missing floor key to token (adapter.FenceFloorNode).
func (n *Node) RaiseFenceRepair(ctx context.Context, key, fenceKey, floorKey, value string, token uint64, retention time.Duration) (bool, error) {
	v, err := n.raiseFence.Run(ctx, n.scripter(), []string{key, fenceKey, floorKey}, value, strconv.FormatUint(token, 10), retention.Milliseconds()).Int64()
	return v == 1, err
}

// flooredReply reads the reply {set, fence, kept} of a fenced acquisition
// that read the fence floor; where names the fence and floor keys in
// errors.
func flooredReply(res []any, err error, where string) (bool, uint64, bool, error) {
	if err == nil && len(res) == 3 {
		kept, _ := res[2].(int64)
		ok, fence, err := fencedReply(res[:2], nil, where)
		return ok, fence, kept == 1, err
	}
	if err == nil {
		err = fmt.Errorf("goredis: fenced acquire with floor: unexpected reply %v", res)
	}
	return false, 0, true, err
}
