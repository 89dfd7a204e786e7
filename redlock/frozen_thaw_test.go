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

// One node of three frozen (a SIGSTOPped redis-server keeps the requests
// it was sent, and runs them once it resumes), m1 and m2 healthy: a lock
// of every kind is granted by m1 and m2, and its Unlock releases them at
// once and m3 once m3 answered (followRelease). Once m3 thaws, its queued
// acquisition is applied, and then the release that followed: m3 holds
// no key of the lock, whether it thawed while the acquisition was still
// waited for (500 ms), or after the client gave up on it (8 s), and
// whether the client was closed right after Unlock (Close ends the wait
// for a node never met, and waits for the release it sends: within the
// release timeout), from a new client (m3 frozen since its start) and a
// long-lived one (m3 froze after it met it).
func TestUnlockLeavesNothingOnAFrozenNodeOnceItThaws(t *testing.T) {
	const ttl = 10 * time.Second
	kinds := []string{"plain", "plain over blocking nodes", "fenced", "read", "write", "set"}
	for _, kind := range kinds {
		for _, fresh := range []bool{true, false} {
			for _, thaw := range []time.Duration{500 * time.Millisecond, 8 * time.Second} {
				for _, closed := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/thaw after %v/closed %v", kind, map[bool]string{true: "new client", false: "long-lived client"}[fresh], thaw, closed)
					t.Run(name, func(t *testing.T) {
						synctest.Test(t, func(t *testing.T) {
							thawRun(t, kind, fresh, closed, thaw, ttl)
						})
					})
				}
			}
		}
	}
}

func thawRun(t *testing.T, kind string, fresh, closed bool, thaw, ttl time.Duration) {
	ctx := t.Context()
	nodes, mems := redlocktest.NewMemNodes(3)
	for i, m := range mems {
		switch kind {
		case "fenced":
			nodes[i] = m.WithFloor()
		case "plain over blocking nodes":
			nodes[i] = redlocktest.Blocking(m)
		}
	}
	defer mems[2].Thaw()
	opts := []redlock.Option{redlock.WithTTL(ttl)}
	if kind == "fenced" {
		opts = append(opts, redlock.WithFencing())
	}
	if fresh {
		mems[2].Freeze()
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !fresh {
		l, err := c.Lock(ctx, "warm")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mems[2].Freeze()
	}
	var l *redlock.Lock
	switch kind {
	case "read":
		l, err = c.RLock(ctx, "r")
	case "write":
		l, err = c.WLock(ctx, "r")
	case "set":
		l, err = c.LockAll(ctx, []string{"r", "s"})
	default:
		l, err = c.Lock(ctx, "r")
	}
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	if closed {
		if err := c.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if took := time.Since(start); took > 2*redlock.DefaultReleaseTimeout {
			t.Errorf("%s lock, m3 frozen: Unlock and Close took %v, want within two release timeouts (%v)", kind, took, 2*redlock.DefaultReleaseTimeout)
		}
	}
	time.Sleep(time.Until(start.Add(thaw)))
	mems[2].Thaw()
	synctest.Wait()
	for _, m := range mems {
		keys, err := m.Keys(context.Background(), redlock.DefaultKeyPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			t.Errorf("%s lock released by Unlock, m3 frozen, thawed %v after (Close after Unlock: %v): %s still holds %v", kind, thaw, closed, m, keys)
		}
	}
}
