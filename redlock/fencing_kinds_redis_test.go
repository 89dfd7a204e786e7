package redlock_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
)

// On redis-server, a writer and a set are repaired from the fence floor
// as a plain lock is: after every node restarted without persistence
// (new replication ids, no keys), a WLock and then a LockAll of the
// resource get tokens above the plain lock's before the restarts, and a
// Lock after them a token above theirs.
func TestFencedWriterAndSetRepairedAfterRestartsRedis(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl, c := cluster(t, a, 3, redlock.WithFencing(), redlock.WithTTL(2*time.Second))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		grant := func(name string, lock func() (*redlock.Lock, error)) uint64 {
			t.Helper()
			l, err := lock()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("%s: Unlock: %v", name, err)
			}
			return l.Token()
		}
		last := grant("Lock", func() (*redlock.Lock, error) { return c.Lock(ctx, "r") })
		for _, s := range cl.Servers {
			s.Restart(0)
		}
		for _, k := range []struct {
			name string
			lock func() (*redlock.Lock, error)
		}{
			{"WLock", func() (*redlock.Lock, error) { return c.WLock(ctx, "r") }},
			{"LockAll", func() (*redlock.Lock, error) { return c.LockAll(ctx, []string{"r", "s"}) }},
			{"Lock", func() (*redlock.Lock, error) { return c.Lock(ctx, "r") }},
		} {
			tok := grant(k.name, k.lock)
			if tok <= last {
				t.Fatalf("%s after every node restarted without persistence: token %d, want above the earlier grant's %d", k.name, tok, last)
			}
			last = tok
		}
	})
}
