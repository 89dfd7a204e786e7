package rueidis

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// PutRecord stores record under recordKey, bound to the SHA-1 of value,
// with an expiry of retention (0: none), if key holds value, in one script
// (adapter.RecordNode).
func (n *Node) PutRecord(ctx context.Context, key, recordKey, value, record string, retention time.Duration) (bool, error) {
	v, err := n.evalKeys(ctx, n.putRecord, []string{key, recordKey}, value, record,
		strconv.FormatInt(retention.Milliseconds(), 10)).AsInt64()
	return v == 1 && err == nil, err
}

// ReadRecord returns the record under recordKey if key holds the value it
// was stored for, and the fence under fenceKey, in one script
// (adapter.RecordNode).
func (n *Node) ReadRecord(ctx context.Context, key, recordKey, fenceKey string) (string, bool, uint64, error) {
	res, err := n.evalKeys(ctx, n.readRecord, []string{key, recordKey, fenceKey}).ToArray()
	if err != nil {
		return "", false, 0, err
	}
	if len(res) != 3 {
		return "", false, 0, fmt.Errorf("rueidis: read record: unexpected reply of %d elements", len(res))
	}
	found, err := res[0].AsInt64()
	if err != nil {
		return "", false, 0, err
	}
	rec, err := res[1].ToString()
	if err != nil {
		return "", false, 0, err
	}
	s, err := res[2].ToString()
	if err != nil {
		return "", false, 0, err
	}
	fence, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return "", false, 0, fmt.Errorf("rueidis: the key %q holds something other than a fence counter (%d bytes, not a uint64; its content is not shown: it may be a secret)", fenceKey, len(s))
	}
	if found != 1 {
		return "", false, fence, nil
	}
	return rec, true, fence, nil
}
