package redlocktest

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock"
)

// BenchLockAll is the shared benchmark body of a set of resources locked as
// one (redlock.Client.LockAll), against one resource: for each size, one
// sub-benchmark "Resources<size>" of TryLockAll+Unlock pairs from one
// goroutine (size 1 is TryLock's path), reporting the acquisition alone as
// the metric acquire-µs/op beside the pair's ns/op; then "Parallel" ones
// with 8 x GOMAXPROCS goroutines, each on sets of its own.
func BenchLockAll(b *testing.B, c *redlock.Client, sizes ...int) {
	ctx := b.Context()
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = prefix + "-" + strconv.Itoa(i)
		}
		return out
	}
	// Warm up: connections dialled and scripts cached before any timing.
	for _, size := range sizes {
		l, err := c.TryLockAll(ctx, names("warm", size))
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, size := range sizes {
		b.Run("Resources"+strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			set := names("seq", size)
			var acquiring time.Duration
			for b.Loop() {
				start := time.Now()
				l, err := c.TryLockAll(ctx, set)
				acquiring += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(acquiring.Microseconds())/float64(b.N), "acquire-µs/op")
		})
	}
	for _, size := range sizes {
		b.Run("Parallel/Resources"+strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			var ids atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				set := names("par"+strconv.FormatInt(ids.Add(1), 10), size)
				for pb.Next() {
					l, err := c.TryLockAll(ctx, set)
					if err != nil {
						b.Error(err)
						return
					}
					if err := l.Unlock(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
