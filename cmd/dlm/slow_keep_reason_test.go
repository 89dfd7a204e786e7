package main

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A lock that dlm lock holds (auto-extended) over healthy nodes too slow
// for its extensions to land ahead of the guard's margin is refused by
// the library (its first extension took longer than a third of the ttl or
// so): dlm says so, exits 69 as for other nodes too slow for the ttl, and
// names a longer --ttl; not "held elsewhere" (75), nor "no quorum in
// time". The error is the library's own, over in-memory nodes answering
// 4.5 s late (ttl 10 s), under synctest.
func TestLockRefusedOverNodesTooSlowToKeepItAsksForALongerTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		nodes, mems := redlocktest.NewMemNodes(3)
		for _, m := range mems {
			m.SetSlow(4500 * time.Millisecond) // every node answers: no "no reply"
		}
		c, err := redlock.New(nodes, redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		l, err := c.Lock(ctx, "r", redlock.WithAutoExtend())
		if err == nil {
			_ = l.Unlock(t.Context())
			t.Fatal("Lock over nodes answering 4.5s late (ttl 10s) granted an auto-extended lock; want it refused")
		}
		reason := acquireReason(err, 0, 1)
		if code := acquireCode(err); code != exitUnavailable || !strings.Contains(reason.Error(), "longer --ttl") || !strings.Contains(reason.Error(), "first extension took 4.5s") {
			t.Errorf("dlm over nodes answering 4.5s late (ttl 10s): exit %d, %q; want %d, saying the first extension took 4.5s and a longer --ttl is needed", code, reason, exitUnavailable)
		}
	})
}
