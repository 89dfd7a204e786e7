package redlocktest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"time"

	"dlm/redlock/adapter"
)

// The record operations of the wire (adapter.RecordNode).
const (
	opPutRecord adapter.Op = 220 + iota
	opReadRecord
)

// recordDigest is what a record is bound to: the hex SHA-1 of the lock
// value, as redis.sha1hex in the record scripts.
func recordDigest(value string) string {
	sum := sha1.Sum([]byte(value))
	return hex.EncodeToString(sum[:])
}

// applyRecord runs a record operation with the semantics of the scripts
// put_record.lua and read_record.lua; called with n.mu held.
func (n *MemNode) applyRecord(c *memCall, now time.Time) memResult {
	r := c.req
	if r.Op == opPutRecord {
		if n.lie == LieAll {
			return memResult{ok: true}
		}
		e, ok := n.live(r.Key, now)
		if !ok || e.value != r.Value {
			return memResult{}
		}
		var exp time.Time
		if c.retention > 0 {
			exp = now.Add(c.retention)
		}
		n.keys[c.recordKey] = memEntry{value: recordDigest(r.Value) + ":" + c.record, expires: exp}
		return memResult{ok: true}
	}
	fence, err := n.fenceLocked(c.fenceKey, now)
	if err != nil {
		return memResult{err: err}
	}
	e, held := n.live(r.Key, now)
	rec, ok := n.live(c.recordKey, now)
	if held && ok {
		if data, found := strings.CutPrefix(rec.value, recordDigest(e.value)+":"); found {
			return memResult{ok: true, record: data, fence: fence}
		}
	}
	return memResult{fence: fence}
}

// PutRecord stores record under recordKey, bound to the digest of value,
// with an expiry of retention (0: none), if key holds value
// (adapter.RecordNode).
func (n *MemNode) PutRecord(ctx context.Context, key, recordKey, value, record string, retention time.Duration) (bool, error) {
	r := n.call(&memCall{ctx: ctx, recordKey: recordKey, record: record, retention: retention,
		req: adapter.Request{Op: opPutRecord, Key: key, Value: value}})
	return r.ok, r.err
}

// ReadRecord returns the record under recordKey if key holds the value it
// was stored for, and the fence under fenceKey (adapter.RecordNode).
func (n *MemNode) ReadRecord(ctx context.Context, key, recordKey, fenceKey string) (string, bool, uint64, error) {
	r := n.call(&memCall{ctx: ctx, recordKey: recordKey, fenceKey: fenceKey,
		req: adapter.Request{Op: opReadRecord, Key: key}})
	return r.record, r.ok, r.fence, r.err
}
