package goredis_test

import (
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// BenchmarkLockUnlock measures acquire+release pairs of a client over 5
// local redis-server nodes, from one goroutine and from many on distinct
// keys (the body every adapter shares):
//
//	go test -run '^$' -bench LockUnlock -benchmem ./redlock/goredis/
func BenchmarkLockUnlock(b *testing.B) {
	cl := redlocktest.Start(b, 5)
	c, err := goredis.Dial(cl.URLs(), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	redlocktest.BenchLockUnlock(b, c, 8, 32, 128)
}

// BenchmarkNode measures one node's operations alone (R3, R5).
func BenchmarkNode(b *testing.B) {
	s := redlocktest.StartServer(b)
	n := node(b, s)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := n.Acquire(ctx, "k", "v", time.Minute); !ok || err != nil {
			b.Fatal(ok, err)
		}
		if ok, err := n.Release(ctx, "k", "v"); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
