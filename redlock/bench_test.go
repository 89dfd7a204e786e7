package redlock_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// BenchmarkLockUnlock measures acquire+release pairs against 5 local
// redis-server nodes: go test -run '^$' -bench LockUnlock -benchmem ./redlock/
func BenchmarkLockUnlock(b *testing.B) {
	cl := redlocktest.Start(b, 5)
	c, err := goredis.Dial(cl.URLs())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := b.Context()
	b.Run("Sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l, err := c.TryLock(ctx, "seq")
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		b.ReportAllocs()
		var ids atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			key := "par-" + strconv.FormatInt(ids.Add(1), 10)
			for pb.Next() {
				l, err := c.TryLock(ctx, key)
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
