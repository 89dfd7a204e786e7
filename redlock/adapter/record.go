package adapter

import (
	"context"
	"time"
)

// RecordNode is an optional capability of a Node: a small public record
// bound to the value that holds a lock key, so that anyone may read who
// holds a lock without learning its value (R4: the value is the holder's
// secret). Leader election (package dlm/election) publishes the leader's
// identity and term this way. Each method must be one atomic step on the
// node (one Lua script on Redis).
//
// The record is stored under recordKey together with a digest (SHA-1) of
// the value it was stored for; it is reported only while the lock key
// holds a value with that digest, so the record of a previous holder is
// never reported once the key expired, was released or is held by another
// value.
type RecordNode interface {
	Node
	// PutRecord stores record under recordKey, bound to the digest of
	// value, with an expiry of retention (0: none), only if key holds
	// value, atomically. It reports whether it stored the record.
	PutRecord(ctx context.Context, key, recordKey, value, record string, retention time.Duration) (bool, error)
	// ReadRecord returns the record stored under recordKey when key exists
	// and holds a value whose digest is the one stored with the record
	// (ok true), and, in the same atomic step, the fence value under
	// fenceKey (0 when there is none; see FencingNode).
	ReadRecord(ctx context.Context, key, recordKey, fenceKey string) (record string, ok bool, fence uint64, err error)
}
