package rueidis

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
	r := n.evalKeys(ctx, n.acquireFenced, []string{key, fenceKey, floorKey}, value, strconv.FormatInt(ttl.Milliseconds(), 10))
	res, err := r.ToArray()
	if err != nil {
		return false, 0, true, err
	}
	if len(res) != 3 {
		return false, 0, true, fmt.Errorf("rueidis: fenced acquire with floor: unexpected reply of %d elements", len(res))
	}
	set, err := res[0].AsInt64()
	if err != nil || set != 1 {
		return false, 0, true, err
	}
	kept, _ := res[2].AsInt64()
	s, err := res[1].ToString()
	if err != nil {
		return true, 0, kept == 1, fmt.Errorf("rueidis: fence value under %q or %q: %w", fenceKey, floorKey, err)
	}
	f, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		// The key was set: report it, so that the client releases it.
		return true, 0, kept == 1, fmt.Errorf("rueidis: the key %q or %q holds something other than a fence counter (%d bytes, not a uint64; its content is not shown: it may be a secret)", fenceKey, floorKey, len(s))
	}
	return true, f, kept == 1, nil
}

// RaiseFenceRepair is RaiseFence that, when it sets the fence, also sets
// the missing floor key to token (adapter.FenceFloorNode).
func (n *Node) RaiseFenceRepair(ctx context.Context, key, fenceKey, floorKey, value string, token uint64, retention time.Duration) (bool, error) {
	v, err := n.evalKeys(ctx, n.raiseFence, []string{key, fenceKey, floorKey}, value,
		strconv.FormatUint(token, 10), strconv.FormatInt(retention.Milliseconds(), 10)).AsInt64()
	return v == 1 && err == nil, err
}
