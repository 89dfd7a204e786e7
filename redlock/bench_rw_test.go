package redlock_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// BenchmarkRW compares acquire+release pairs of a plain lock, a read lock
// and a write lock, sequentially, against 5 local redis-server nodes, over
// every adapter (read-write locks run one script per request, unbatched):
//
//	go test -run '^$' -bench RW -benchmem ./redlock/
func BenchmarkRW(b *testing.B) {
	cl := redlocktest.Start(b, 5)
	for _, a := range adapters() {
		// A generous node timeout: the benchmark measures the round
		// trips, not the machine's hiccups.
		c, err := a.dial(cl.URLs(), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		for _, bc := range []struct {
			name string
			try  func(context.Context, string, ...redlock.LockOption) (*redlock.Lock, error)
		}{
			{"Lock", c.TryLock},
			{"RLock", c.TryRLock},
			{"WLock", c.TryWLock},
		} {
			b.Run(a.name+"/"+bc.name, func(b *testing.B) {
				ctx := b.Context()
				b.ReportAllocs()
				for b.Loop() {
					l, err := bc.try(ctx, "bench-rw")
					if err != nil {
						b.Fatal(err)
					}
					if err := l.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		_ = c.Close()
	}
}
