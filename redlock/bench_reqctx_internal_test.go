package redlock

import (
	"context"
	"testing"
	"time"
)

// BenchmarkFanContext measures what a fan's request context costs, as a
// fan over 5 nodes uses it on the batching adapters' path: made from the
// caller's cancelable context with the node timeout, asked for Err twice
// and Deadline once per node, then cancelled at the last answer. "reqCtx"
// is the fan's own (engine.go), "std" is context.WithDeadline, which
// reqCtx stands for; TestReqCtx checks that they behave alike.
//
//	go test -run '^$' -bench FanContext -benchmem ./redlock/
func BenchmarkFanContext(b *testing.B) {
	const nodes = 5
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("reqCtx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rc := new(reqCtx)
			rc.init(base, time.Now(), time.Second)
			var ctx context.Context = rc
			for range nodes {
				_ = ctx.Err()
				_, _ = ctx.Deadline()
				_ = ctx.Err()
			}
			rc.unwatched.Store(true)
			rc.cancel()
		}
	})
	b.Run("std", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, stop := context.WithDeadline(base, time.Now().Add(time.Second))
			for range nodes {
				_ = ctx.Err()
				_, _ = ctx.Deadline()
				_ = ctx.Err()
			}
			stop()
		}
	})
}
