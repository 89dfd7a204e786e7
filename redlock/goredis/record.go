package goredis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"dlm/redlock/adapter"
)

var _ adapter.RecordNode = (*Node)(nil)

// PutRecord stores record under recordKey, bound to the SHA-1 of value,
// with an expiry of retention (0: none), if key holds value, in one script
// (adapter.RecordNode).
func (n *Node) PutRecord(ctx context.Context, key, recordKey, value, record string, retention time.Duration) (bool, error) {
	v, err := n.putRecord.Run(ctx, n.scripter(), []string{key, recordKey}, value, record, retention.Milliseconds()).Int64()
	return v == 1, err
}

// ReadRecord returns the record under recordKey if key holds the value it
// was stored for, and the fence under fenceKey, in one script
// (adapter.RecordNode).
func (n *Node) ReadRecord(ctx context.Context, key, recordKey, fenceKey string) (string, bool, uint64, error) {
	res, err := n.readRecord.Run(ctx, n.scripter(), []string{key, recordKey, fenceKey}).Slice()
	if err != nil {
		return "", false, 0, err
	}
	if len(res) != 3 {
		return "", false, 0, fmt.Errorf("goredis: read record: unexpected reply %v", res)
	}
	found, _ := res[0].(int64)
	rec, _ := res[1].(string)
	s, _ := res[2].(string)
	fence, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return "", false, 0, fmt.Errorf("goredis: the key %q holds something other than a fence counter (%d bytes, not a uint64; its content is not shown: it may be a secret)", fenceKey, len(s))
	}
	if found != 1 {
		return "", false, fence, nil
	}
	return rec, true, fence, nil
}
