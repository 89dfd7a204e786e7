package redlocktest

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
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

// BenchClusterNode is the shared benchmark body of a cluster node of every
// adapter, over a real Redis Cluster of one master: acquire+release pairs
// of the node alone, from one goroutine ("AcquireRelease") and from 16 on
// distinct keys ("AcquireReleaseParallel"). It shows what routing each
// request by the node's own slot map costs.
func BenchClusterNode(b *testing.B, dial ClusterNodeDialer) {
	cl := StartRedisCluster(b, 1, 0)
	n, err := dial(cl.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { closeNode(n) })
	BenchNodePairs(b, n, func(k string) string { return "{" + k + "}" })
}

// BenchNodePairs is the shared body of a node's benchmarks of acquire+release
// pairs alone: from one goroutine on one key ("AcquireRelease") and from 16
// on distinct keys ("AcquireReleaseParallel"); key makes each key's name
// from a plain one (a cluster node's keys take a hash tag).
func BenchNodePairs(b *testing.B, n adapter.Node, key func(string) string) {
	ctx := b.Context()
	b.Run("AcquireRelease", func(b *testing.B) {
		b.ReportAllocs()
		k := key("k")
		for b.Loop() {
			if ok, err := n.Acquire(ctx, k, "v", time.Minute); !ok || err != nil {
				b.Fatal(ok, err)
			}
			if ok, err := n.Release(ctx, k, "v"); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("AcquireReleaseParallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(16)
		var ids atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			k := key("p" + strconv.FormatInt(ids.Add(1), 10))
			for pb.Next() {
				if ok, err := n.Acquire(ctx, k, "v", time.Minute); !ok || err != nil {
					b.Error(ok, err)
					return
				}
				if ok, err := n.Release(ctx, k, "v"); !ok || err != nil {
					b.Error(ok, err)
					return
				}
			}
		})
	})
}
