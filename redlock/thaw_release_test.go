package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A release that returns nil leaves nothing on any node once the nodes
// answer again. One node of three frozen (a SIGSTOPped redis-server), the
// two others healthy: each call that frees r returns nil, the clients are
// closed (a dlm command ends), the frozen node thaws and applies what it
// was sent; then no node may hold r. Every release call of frozenCalls is
// a row, for a new and a long-lived client, the node frozen before or
// after the lock. ForceRelease failed: it deleted only where its read
// answered, and the frozen node's read never did. (MemNode takes requests
// without a connection; a new process's connection to a redis-server
// frozen before it started never carries a request: docs/guarantees.md.)
func TestEveryReleaseLeavesNothingOnAThawedNode(t *testing.T) {
	const ttl = 10 * time.Second
	for _, kind := range []string{"new client", "long-lived client"} {
		for _, when := range []string{"before", "after"} {
			for _, fc := range frozenCalls() {
				if !fc.freed {
					continue
				}
				t.Run(fmt.Sprintf("%s/frozen %s its lock/%s", kind, when, fc.name), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						releaseThawRun(t, kind == "new client", when == "before", fc, ttl)
					})
				})
			}
		}
	}
}

func releaseThawRun(t *testing.T, fresh, before bool, fc frozenCall, ttl time.Duration) {
	ctx := t.Context()
	nodes, mems := redlocktest.NewMemNodes(3)
	for i, m := range mems {
		nodes[i] = m.WithFloor()
	}
	defer mems[2].Thaw()
	opts := []redlock.Option{redlock.WithTTL(ttl)}
	if fc.fenced {
		opts = append(opts, redlock.WithFencing())
	}
	holder, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if fresh && before {
		mems[2].Freeze()
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := &frozenEnv{c: c, holder: holder, mems: mems}
	if !fresh {
		l, err := c.Lock(ctx, "warm")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if before {
			mems[2].Freeze()
		}
	}
	if fc.setup != nil {
		if err := fc.setup(ctx, e); err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	synctest.Wait()
	if !before {
		mems[2].Freeze()
	}
	start := time.Now()
	if err := fc.call(ctx, e); err != nil {
		t.Fatalf("%s over m3 frozen = %v after %v", fc.name, err, time.Since(start).Round(time.Millisecond))
	}
	took := time.Since(start)
	c.Close()
	holder.Close()
	closed := time.Since(start)
	mems[2].Thaw()
	synctest.Wait()
	for _, m := range mems {
		for _, key := range []string{"dlm:lock:r", "dlm:lock:s"} {
			_, held, _ := m.Value(context.Background(), key)
			readers, _ := m.Readers(key)
			if held || len(readers) > 0 {
				ttlLeft, _, _ := m.TTL(context.Background(), key)
				t.Errorf("%s over m3 frozen returned nil after %v (clients closed %v after it began); m3 thawed: %s holds %s (%v of its ttl left)",
					fc.name, took.Round(time.Millisecond), closed.Round(time.Millisecond), m, key, ttlLeft.Round(time.Millisecond))
			}
		}
	}
}
