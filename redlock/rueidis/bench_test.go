package rueidis_test

import (
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// BenchmarkLockUnlock measures acquire+release pairs of a client over 5
// local redis-server nodes, from one goroutine and from many on distinct
// keys, with the defaults (batches, no flush delay) and with a flush delay
// of 100µs:
//
//	go test -run '^$' -bench LockUnlock -benchmem ./redlock/rueidis/
func BenchmarkLockUnlock(b *testing.B) {
	cl := redlocktest.Start(b, 5)
	tunings := []struct {
		name string
		opts []rueidis.Option
	}{
		{"default", nil},
		{"flush100us", []rueidis.Option{rueidis.WithMaxFlushDelay(100 * time.Microsecond)}},
	}
	for _, tu := range tunings {
		b.Run(tu.name, func(b *testing.B) { benchLockUnlock(b, cl, tu.opts) })
	}
}

func benchLockUnlock(b *testing.B, cl *redlocktest.Cluster, opts []rueidis.Option) {
	c, err := rueidis.DialTuned(cl.URLs(), opts, redlock.WithNodeTimeout(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	redlocktest.BenchLockUnlock(b, c, 8, 32, 128)
}

// BenchmarkNode measures one node's operations alone (R3, R5).
func BenchmarkNode(b *testing.B) {
	s := redlocktest.StartServer(b)
	redlocktest.BenchNodePairs(b, node(b, s), func(k string) string { return k })
}

// BenchmarkHandOver measures critical sections on one contended key: 4 x
// GOMAXPROCS goroutines lock and unlock it with no work in between, so an
// operation is one hand-over from one Lock call to the next (handoff.go):
// acquired on the waiter's behalf (pass), or kept as it is
// (WithHandoffKeep: keep); "-read" rows read each lock's value, which must
// change nothing; without hand-off, one release and the next timed retry
// that wins:
//
//	go test -run '^$' -bench HandOver -benchmem ./redlock/rueidis/
func BenchmarkHandOver(b *testing.B) {
	cl := redlocktest.Start(b, 5)
	for _, tt := range []struct {
		name string
		opts []redlock.Option
		read bool // each holder reads its lock's value
	}{
		{"pass", nil, false},
		{"pass-read", nil, true},
		{"keep", []redlock.Option{redlock.WithHandoffKeep()}, false},
		{"keep-read", []redlock.Option{redlock.WithHandoffKeep()}, true},
		{"no-handoff", []redlock.Option{redlock.WithHandoff(false)}, false},
	} {
		b.Run(tt.name, func(b *testing.B) {
			c, err := rueidis.Dial(cl.URLs(), append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, tt.opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := b.Context()
			b.ReportAllocs()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l, err := c.Lock(ctx, "contended")
					if err != nil {
						b.Error(err)
						return
					}
					if tt.read && l.Value() == "" {
						b.Error("a held lock without a value")
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
