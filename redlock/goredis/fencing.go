package goredis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"dlm/redlock/adapter"
)

var _ adapter.FencingNode = (*Node)(nil)

// AcquireFenced runs SET key value NX PX ttl and, when it set the key, reads
// the fence value under fenceKey, in one script (R3, R18 phase 1).
func (n *Node) AcquireFenced(ctx context.Context, key, fenceKey, value string, ttl time.Duration) (bool, uint64, error) {
	res, err := n.acquireFenced.Run(ctx, n.scripter(), []string{key, fenceKey}, value, ttl.Milliseconds()).Slice()
	return fencedReply(res, err, fmt.Sprintf("%q", fenceKey))
}

// fencedReply reads the reply {set, fence} of a fenced acquisition (of one
// key or of a set); where names the fence keys in errors.
func fencedReply(res []any, err error, where string) (bool, uint64, error) {
	if err != nil {
		return false, 0, err
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("goredis: fenced acquire: unexpected reply %v", res)
	}
	set, _ := res[0].(int64)
	if set != 1 {
		return false, 0, nil
	}
	s, _ := res[1].(string)
	f, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		// The key was set: report it, so that the client releases it.
		return true, 0, fmt.Errorf("goredis: the key under %s holds something other than a fence counter (%d bytes, not a uint64; its content is not shown: it may be a secret)", where, len(s))
	}
	return true, f, nil
}

// RaiseFence sets the fence under fenceKey to token, with an expiry of
// retention (0: none), if key holds value and the fence is below token, in
// one script (R18 phase 2).
func (n *Node) RaiseFence(ctx context.Context, key, fenceKey, value string, token uint64, retention time.Duration) (bool, error) {
	v, err := n.raiseFence.Run(ctx, n.scripter(), []string{key, fenceKey}, value, strconv.FormatUint(token, 10), retention.Milliseconds()).Int64()
	return v == 1, err
}
