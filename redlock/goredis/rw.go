package goredis

import (
	"context"
	"strconv"
	"time"

	"dlm/redlock/adapter"
)

var _ adapter.RWNode = (*Node)(nil)

// The read-write locks of a Node (adapter.RWNode): each method is one run
// of the shared script redlock/scripts/rw.lua.

// RAcquire adds a reader of key with value and an expiry of ttl when key is
// absent or held by readers and no writer waits.
func (n *Node) RAcquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.runRW(ctx, key, "racquire", value, ms(ttl))
}

// RRelease removes the reader of key with value.
func (n *Node) RRelease(ctx context.Context, key, value string) (bool, error) {
	return n.runRW(ctx, key, "rrelease", value)
}

// RExtend resets the expiry of the reader of key with value to ttl when it
// still holds key (R17).
func (n *Node) RExtend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.runRW(ctx, key, "rextend", value, ms(ttl))
}

// WAcquire sets key to value with an expiry of ttl when no live reader or
// writer holds it; otherwise, when readers hold it and waiter is not empty,
// it leaves or refreshes waiter's mark.
func (n *Node) WAcquire(ctx context.Context, key, value, waiter string, ttl time.Duration) (bool, error) {
	return n.runRW(ctx, key, "wacquire", value, ms(ttl), waiter)
}

// WUnwait removes waiter's mark from key.
func (n *Node) WUnwait(ctx context.Context, key, waiter string) (bool, error) {
	return n.runRW(ctx, key, "wunwait", waiter)
}

// WMark leaves or refreshes waiter's mark where live readers hold key,
// without acquiring (a plain lock's waiting mark).
func (n *Node) WMark(ctx context.Context, key, waiter string, ttl time.Duration) (bool, error) {
	return n.runRW(ctx, key, "wmark", waiter, ms(ttl))
}

// WAcquireFenced is WAcquire that, when it set key, also reads the fence
// value under fenceKey, in the same script (R18 phase 1).
func (n *Node) WAcquireFenced(ctx context.Context, key, fenceKey, value, waiter string, ttl time.Duration) (bool, uint64, error) {
	res, err := n.rw.Run(ctx, n.scripter(), []string{key, fenceKey}, "wacquirefenced", value, ms(ttl), waiter).Slice()
	return fencedReply(res, err, strconv.Quote(fenceKey))
}

func (n *Node) runRW(ctx context.Context, key string, args ...any) (bool, error) {
	v, err := n.rw.Run(ctx, n.scripter(), []string{key}, args...).Int64()
	return v == 1, err
}

// ms is d in whole milliseconds, as the scripts take it.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
