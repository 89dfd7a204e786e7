package goredis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"dlm/redlock/adapter"
)

var _ adapter.FenceFloorNode = (*Node)(nil)

// AcquireFencedFloor is AcquireFenced that also reads the node's fence
// floor (adapter.FenceFloorNode): the restart repair of redlock/fencing.go.
func (n *Node) AcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value string, ttl time.Duration) (bool, uint64, bool, error) {
	res, err := n.acquireFenced.Run(ctx, n.scripter(), []string{key, fenceKey, floorKey}, value, ttl.Milliseconds()).Slice()
	if err == nil && len(res) == 3 {
		kept, _ := res[2].(int64)
		ok, fence, err := fencedReply(res[:2], nil, fmt.Sprintf("%q or %q", fenceKey, floorKey))
		return ok, fence, kept == 1, err
	}
	if err == nil {
		err = fmt.Errorf("goredis: fenced acquire with floor: unexpected reply %v", res)
	}
	return false, 0, true, err
}

// RaiseFenceRepair is RaiseFence that, when it sets the fence, also sets
// the missing floor key to token (adapter.FenceFloorNode).
func (n *Node) RaiseFenceRepair(ctx context.Context, key, fenceKey, floorKey, value string, token uint64, retention time.Duration) (bool, error) {
	v, err := n.raiseFence.Run(ctx, n.scripter(), []string{key, fenceKey, floorKey}, value, strconv.FormatUint(token, 10), retention.Milliseconds()).Int64()
	return v == 1, err
}
