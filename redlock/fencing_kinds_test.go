package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Every fenced grant of a resource, whatever its kind (Lock, WLock, a set
// of LockAll), carries a token above every earlier grant's, across a
// rolling restart without persistence: each node down past the ttl and
// back empty, one at a time, which mutual exclusion allows. The floor
// (the restart repair) then gives a clock value, for every kind, after
// an earlier grant of any kind.
func TestFencedTokensOfEveryKindRiseAcrossRestarts(t *testing.T) {
	kinds := []struct {
		name string
		lock func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error)
	}{
		{"Lock", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.Lock(ctx, "r") }},
		{"WLock", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.WLock(ctx, "r") }},
		{"LockAll", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.LockAll(ctx, []string{"r", "s"})
		}},
	}
	for _, first := range kinds {
		for _, next := range kinds {
			t.Run(first.name+" then "+next.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					const ttl = 2 * time.Second
					_, mems := redlocktest.NewMemNodes(3)
					nodes := make([]redlock.Node, len(mems))
					for i, m := range mems {
						nodes[i] = m.WithFloor()
					}
					c, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithTTL(ttl))
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					// Two grants before the restarts: the second's token
					// is the resource's last.
					var last uint64
					for range 2 {
						l, err := first.lock(t.Context(), c)
						if err != nil {
							t.Fatal(err)
						}
						last = l.Token()
						if err := l.Unlock(t.Context()); err != nil {
							t.Fatal(err)
						}
					}
					for _, m := range mems { // a rolling restart, each down past the ttl
						m.Restart(ttl + ttl/4)
						time.Sleep(ttl + ttl/2)
					}
					for i := range 2 {
						l, err := next.lock(t.Context(), c)
						if err != nil {
							t.Fatal(err)
						}
						if l.Token() <= last {
							t.Errorf("%s after %s and a rolling restart (grant %d): token %d, want above the earlier grant's %d", next.name, first.name, i+1, l.Token(), last)
						}
						last = l.Token()
						if err := l.Unlock(t.Context()); err != nil {
							t.Fatal(err)
						}
					}
				})
			})
		}
	}
}
