package redlock_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// BenchmarkAcquire measures the acquisition path itself, without a
// network: one acquisition and its release per iteration, from one
// goroutine, over 5 in-memory nodes (redlocktest.MemNode, which has every
// capability, the hand-off's included), for each kind of acquisition.
// Its allocations per pair are the client's and the in-memory nodes'
// together: they tell a change of the path that costs an allocation.
//
//	go test -run '^$' -bench Acquire -benchmem ./redlock/
func BenchmarkAcquire(b *testing.B) {
	type lockFn func(c *redlock.Client, ctx context.Context) (*redlock.Lock, error)
	one := func(c *redlock.Client, ctx context.Context) (*redlock.Lock, error) { return c.Lock(ctx, "bench") }
	for _, bc := range []struct {
		name string
		opts []redlock.Option
		lock lockFn
	}{
		{"Lock", nil, one},
		{"TryLock", nil, func(c *redlock.Client, ctx context.Context) (*redlock.Lock, error) { return c.TryLock(ctx, "bench") }},
		{"LockNoHandoff", []redlock.Option{redlock.WithHandoff(false)}, one},
		{"LockFenced", []redlock.Option{redlock.WithFencing()}, one},
		{"RLock", nil, func(c *redlock.Client, ctx context.Context) (*redlock.Lock, error) { return c.RLock(ctx, "bench") }},
		{"WLock", nil, func(c *redlock.Client, ctx context.Context) (*redlock.Lock, error) { return c.WLock(ctx, "bench") }},
		{"LockAll", nil, func(c *redlock.Client, ctx context.Context) (*redlock.Lock, error) {
			return c.LockAll(ctx, []string{"bench-a", "bench-b"})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			nodes, _ := redlocktest.NewMemNodes(5)
			c, err := redlock.New(nodes, append(bc.opts, redlock.WithNodeTimeout(time.Second))...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			benchPairs(b, func(ctx context.Context) (*redlock.Lock, error) { return bc.lock(c, ctx) })
		})
	}
}

// benchPairs runs one acquisition by lock and its Unlock per iteration of
// b, reporting allocations.
func benchPairs(b *testing.B, lock func(ctx context.Context) (*redlock.Lock, error)) {
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		l, err := lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
