package redlocktest

import (
	"context"
	"fmt"
	"io"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
)

// Blocking returns n with its blocking methods only: redlock.Node, and
// adapter.FencingNode when n has it, but none of the asynchronous
// capabilities (AsyncNode, BatchNode, HandoffNode, TransferNode). A client
// over such nodes takes the core's path for adapters without AsyncNode: a
// goroutine per node and request, every fan-out waiting for every node. It
// keeps n's name (fmt.Stringer) and Close (io.Closer).
func Blocking(n redlock.Node) redlock.Node {
	b := blocking{n: n}
	if f, ok := n.(adapter.FencingNode); ok {
		return blockingFencing{blocking: b, f: f}
	}
	return b
}

type blocking struct{ n redlock.Node }

func (b blocking) String() string {
	if s, ok := b.n.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%v", b.n)
}

func (b blocking) Close() error {
	if c, ok := b.n.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (b blocking) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return b.n.Acquire(ctx, key, value, ttl)
}

func (b blocking) Release(ctx context.Context, key, value string) (bool, error) {
	return b.n.Release(ctx, key, value)
}

func (b blocking) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return b.n.Extend(ctx, key, value, ttl)
}

type blockingFencing struct {
	blocking
	f adapter.FencingNode
}

func (b blockingFencing) AcquireFenced(ctx context.Context, key, fenceKey, value string, ttl time.Duration) (bool, uint64, error) {
	return b.f.AcquireFenced(ctx, key, fenceKey, value, ttl)
}

func (b blockingFencing) RaiseFence(ctx context.Context, key, fenceKey, value string, token uint64, retention time.Duration) (bool, error) {
	return b.f.RaiseFence(ctx, key, fenceKey, value, token, retention)
}
