package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// lockKind takes one kind of auto-extended lock on resource "r" (a set:
// "r" and "s").
type lockKind struct {
	name string
	lock func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error)
}

// autoExtendedKinds returns every kind of lock: Lock, LockAll, RLock and
// WLock, in that order.
func autoExtendedKinds() []lockKind {
	return []lockKind{
		{"Lock", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.Lock(ctx, "r", redlock.WithAutoExtend())
		}},
		{"LockAll", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.LockAll(ctx, []string{"r", "s"}, redlock.WithAutoExtend())
		}},
		{"RLock", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.RLock(ctx, "r", redlock.WithAutoExtend())
		}},
		{"WLock", func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.WLock(ctx, "r", redlock.WithAutoExtend())
		}},
	}
}

// A rolling restart done as docs/operations.md says (one node at a time,
// each down past the ttl and back empty, the next only after the previous
// served again for a ttl) ends no auto-extended lock, whatever its kind:
// each extension restores, on the node that forgot them, a lock's key, a
// set's keys and a reader's share alike.
func TestRollingRestartKeepsEveryKindOfLock(t *testing.T) {
	for _, k := range autoExtendedKinds() {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = 3 * time.Second
				nodes, mems := redlocktest.NewMemNodes(3)
				c, err := redlock.New(nodes, redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l, err := k.lock(t.Context(), c)
				if err != nil {
					t.Fatal(err)
				}
				for i, m := range mems {
					m.Restart(ttl + ttl/4)                // down past the ttl, back empty
					time.Sleep(ttl + ttl/4 + ttl + ttl/4) // back, then served a ttl
					select {
					case <-l.Done():
						t.Fatalf("%s ended during a rolling restart, after node %d: %v", k.name, i+1, l.Err())
					default:
					}
				}
				if err := l.Unlock(t.Context()); err != nil {
					t.Fatalf("Unlock after the rolling restart: %v", err)
				}
				synctest.Wait() // every release answered
				for i, m := range mems {
					for _, key := range []string{"dlm:lock:r", "dlm:lock:s"} {
						if v, held, _ := m.Value(context.Background(), key); held {
							r, w := m.Readers(key)
							t.Errorf("node %d still holds %s after Unlock: %q readers %q waiters %q", i+1, key, v, r, w)
						}
					}
				}
			})
		})
	}
}
