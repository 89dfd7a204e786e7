package redlock_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// BenchmarkFencing compares acquire+release pairs with and without fencing
// tokens (R18: a second round trip per acquisition), sequentially, against 5
// local redis-server nodes:
//
//	go test -run '^$' -bench Fencing -benchmem ./redlock/
func BenchmarkFencing(b *testing.B) {
	cl := redlocktest.Start(b, 5)
	for _, bc := range []struct {
		name string
		opts []redlock.Option
	}{
		{"Unfenced", nil},
		{"Fenced", []redlock.Option{redlock.WithFencing()}},
		{"FencedByzantine", []redlock.Option{redlock.WithFencing(), redlock.WithByzantineNodes(1)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// A generous node timeout: the benchmark measures the round
			// trips, not the machine's hiccups.
			c, err := goredis.Dial(cl.URLs(), append(bc.opts, redlock.WithNodeTimeout(time.Second))...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			benchPairs(b, func(ctx context.Context) (*redlock.Lock, error) { return c.TryLock(ctx, "bench-"+bc.name) })
		})
	}
}
