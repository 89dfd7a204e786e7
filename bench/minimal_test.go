package main

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"dlm/redlock/redlocktest"
)

// The minimal reference is a lock: a second TryLock of a held key fails,
// and the release frees it on every node.
func TestMinimal(t *testing.T) {
	for _, tt := range []struct {
		name string
		open func([]string) (locker, error)
	}{{libMinimal, openMinimal}, {libMinimalGo, openMinimalGoRedis}} {
		t.Run(tt.name, func(t *testing.T) { testMinimal(t, tt.open) })
	}
}

func testMinimal(t *testing.T, open func([]string) (locker, error)) {
	cl := redlocktest.Start(t, 5)
	lk, err := open(cl.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.close()
	ctx := t.Context()
	rel, err := lk.TryLock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.TryLock(ctx, "k"); !errors.Is(err, errMinimalNotAcquired) {
		t.Fatalf("second TryLock of a held key: %v, want errMinimalNotAcquired", err)
	}
	if err := rel(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range cl.Servers {
		if n, err := s.Client().Exists(ctx, "k").Result(); err != nil || n != 0 {
			t.Errorf("%s still holds the key after the release: %d, %v", s.Addr(), n, err)
		}
	}
	if _, err := open([]string{"not a url"}); err == nil {
		t.Error("open of a bad URL: no error")
	}
}

// go test -run '^$' -bench Minimal -cpuprofile ... profiles the reference.
func BenchmarkMinimal(b *testing.B) {
	cl := redlocktest.Start(b, 5)
	lk, err := openMinimal(cl.URLs())
	if err != nil {
		b.Fatal(err)
	}
	defer lk.close()
	ctx := context.Background()
	b.SetParallelism(32)
	var ids atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		key := "p" + strconv.FormatInt(ids.Add(1), 10)
		for pb.Next() {
			rel, err := lk.TryLock(ctx, key)
			if err != nil {
				b.Error(err)
				return
			}
			_ = rel(ctx)
		}
	})
}
