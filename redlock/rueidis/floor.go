package rueidis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/slots"
)

var _ adapter.FenceFloorNode = (*Node)(nil)

// AcquireFencedFloor is AcquireFenced that also reads the node's fence
// floor (adapter.FenceFloorNode): the restart repair of redlock/fencing.go.
func (n *Node) AcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value string, ttl time.Duration) (bool, uint64, bool, error) {
	r := n.evalKeys(ctx, n.acquireFenced, []string{key, fenceKey, floorKey}, value, strconv.FormatInt(ttl.Milliseconds(), 10))
	return flooredReply(r, fmt.Sprintf("%q or %q", fenceKey, floorKey))
}

// WAcquireFencedFloor is WAcquireFenced that also reads the node's fence
// floor (adapter.FenceFloorNode).
func (n *Node) WAcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value, waiter string, ttl time.Duration) (bool, uint64, bool, error) {
	r := n.evalKeys(ctx, n.rw, []string{key, fenceKey, floorKey}, "wacquirefenced", value, ms(ttl), waiter)
	return flooredReply(r, fmt.Sprintf("%q or %q", fenceKey, floorKey))
}

// AcquireAllFencedFloor is AcquireAllFenced that also reads the node's
// fence floors (adapter.FenceFloorNode).
func (n *Node) AcquireAllFencedFloor(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, ttl time.Duration) (bool, uint64, bool, error) {
	if n.cluster && len(slots.Split(keys)) > 1 { // cluster.go
		floorOf := slots.NewFloors(fenceKeys, floorKeys)
		var mu sync.Mutex
		kept := true
		ok, fence, err := n.fencedSplit(ctx, keys, fenceKeys, value, true, func(keys, fenceKeys []string) (bool, uint64, error) {
			ok, fence, k, err := n.AcquireAllFencedFloor(ctx, keys, fenceKeys, floorOf.Of(fenceKeys), value, ttl)
			mu.Lock()
			kept = kept && k
			mu.Unlock()
			return ok, fence, err
		})
		mu.Lock()
		defer mu.Unlock()
		return ok, fence, kept, err
	}
	r := n.evalKeys(ctx, n.multi.acquireFenced, joinKeys(keys, fenceKeys, floorKeys...), value,
		strconv.FormatInt(ttl.Milliseconds(), 10), strconv.Itoa(len(keys)))
	return flooredReply(r, fmt.Sprintf("one of %q or %q", fenceKeys, floorKeys))
}

// RaiseFenceRepair is RaiseFence that, when it sets the fence, also sets
// the missing floor key to token (adapter.FenceFloorNode).
func (n *Node) RaiseFenceRepair(ctx context.Context, key, fenceKey, floorKey, value string, token uint64, retention time.Duration) (bool, error) {
	v, err := n.evalKeys(ctx, n.raiseFence, []string{key, fenceKey, floorKey}, value,
		strconv.FormatUint(token, 10), strconv.FormatInt(retention.Milliseconds(), 10)).AsInt64()
	return v == 1 && err == nil, err
}

// RaiseFencesRepair is RaiseFences that, when it sets the fences, also
// sets the missing floor keys to token (adapter.FenceFloorNode).
func (n *Node) RaiseFencesRepair(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	if n.cluster && len(slots.Split(keys)) > 1 { // cluster.go
		floorOf := slots.NewFloors(fenceKeys, floorKeys)
		ok, _, err := n.fencedSplit(ctx, keys, fenceKeys, value, false, func(keys, fenceKeys []string) (bool, uint64, error) {
			ok, err := n.RaiseFencesRepair(ctx, keys, fenceKeys, floorOf.Of(fenceKeys), value, token, retention)
			return ok, 0, err
		})
		return ok, err
	}
	v, err := n.evalKeys(ctx, n.multi.raiseFences, joinKeys(keys, fenceKeys, floorKeys...), value,
		strconv.FormatUint(token, 10), strconv.FormatInt(retention.Milliseconds(), 10), strconv.Itoa(len(keys))).AsInt64()
	return v == 1 && err == nil, err
}

// flooredReply reads the reply {set, fence, kept} of a fenced acquisition
// that read the fence floor; where names the fence and floor keys in
// errors.
func flooredReply(r rueidis.RedisResult, where string) (bool, uint64, bool, error) {
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
		return true, 0, kept == 1, fmt.Errorf("rueidis: fence value under %s: %w", where, err)
	}
	f, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		// The key was set: report it, so that the client releases it.
		return true, 0, kept == 1, fmt.Errorf("rueidis: the key under %s holds something other than a fence counter (%d bytes, not a uint64; its content is not shown: it may be a secret)", where, len(s))
	}
	return true, f, kept == 1, nil
}

// joinKeys is the KEYS of the fenced scripts of a set: the lock keys, then
// their fence keys, then their floor keys when the script reads or
// repairs the fence floor.
func joinKeys(keys, fenceKeys []string, floorKeys ...string) []string {
	return append(append(append(make([]string, 0, len(keys)+len(fenceKeys)+len(floorKeys)), keys...), fenceKeys...), floorKeys...)
}
