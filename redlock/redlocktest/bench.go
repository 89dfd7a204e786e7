package redlocktest

import (
	"strconv"
	"sync/atomic"
	"testing"

	"dlm/redlock"
)

// BenchLockUnlock is the shared benchmark body of every adapter (style rule
// 13): acquire+release pairs of c from one goroutine ("Sequential"), then
// from many goroutines on distinct keys: "Parallel" with GOMAXPROCS
// goroutines, or "ParallelN" for each N given (N x GOMAXPROCS goroutines).
func BenchLockUnlock(b *testing.B, c *redlock.Client, parallelism ...int) {
	ctx := b.Context()
	pair := func(key string) error {
		l, err := c.TryLock(ctx, key)
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	b.Run("Sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := pair("seq"); err != nil {
				b.Fatal(err)
			}
		}
	})
	type run struct {
		name string
		p    int
	}
	runs := []run{{"Parallel", 1}}
	if len(parallelism) > 0 {
		runs = runs[:0]
		for _, p := range parallelism {
			runs = append(runs, run{"Parallel" + strconv.Itoa(p), p})
		}
	}
	for _, r := range runs {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(r.p)
			var ids atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				key := "par-" + strconv.FormatInt(ids.Add(1), 10)
				for pb.Next() {
					if err := pair(key); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
