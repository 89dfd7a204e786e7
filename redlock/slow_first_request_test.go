package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Every dlm command is a new client, whose first request may be no grant:
// dlm release HANDLE releases, dlm extend HANDLE resumes (an extension).
// Over healthy nodes that answer past the limit (1.5 s at ttl 10 s), such
// a client cannot know they are slow, and its first request must wait for
// them as a first grant does (timeout.go). In memory, under synctest.
//
// Failed before (only a grant waited for a node the client had never
// met): "a new client's Release of a handle = redlock: release lock "r"
// by handle: redlock: release not confirmed by a quorum / m2: context
// deadline exceeded / m3: context deadline exceeded; 0 of 3 nodes hold
// the key after it", and "... Resume ... = ...: lock not extended ...; 3
// of 3 nodes hold the key after it".
func TestNewClientsHandleRequestsOverSlowNodes(t *testing.T) {
	for _, how := range []string{"Release", "Resume"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = 10 * time.Second
				nodes, mems := redlocktest.NewMemNodes(3)
				_, _, h := handleOfR(t, nodes, ttl)
				mems[1].SetSlow(1500 * time.Millisecond)
				mems[2].SetSlow(1500 * time.Millisecond)
				fresh, err := redlock.New(nodes, redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer fresh.Close()
				if how == "Release" {
					err = fresh.Release(context.Background(), h)
				} else {
					_, err = fresh.Resume(context.Background(), h)
				}
				synctest.Wait()
				if err != nil {
					t.Errorf("two of three nodes healthy but answering 1.5 s late (ttl %v): a new client's %s of a handle = %v; %d of 3 nodes hold the key after it",
						ttl, how, err, holding(mems, "dlm:lock:r"))
				}
			})
		})
	}
}

// holding counts the nodes that hold key.
func holding(mems []*redlocktest.MemNode, key string) int {
	n := 0
	for _, m := range mems {
		if _, ok, _ := m.Value(context.Background(), key); ok {
			n++
		}
	}
	return n
}

// Every request a new client can make first succeeds on its first call
// over healthy nodes answering past the limit (1.2 s, ttl 10 s): a new
// process (every dlm command) cannot know that its nodes are slow, and a
// slow healthy node is not an error. A lock of another client (made while
// the nodes were fast) is there for the calls that need one. In memory,
// under synctest.
func TestEveryFirstRequestOfANewClientOverSlowNodes(t *testing.T) {
	const ttl, late = 10 * time.Second, 1200 * time.Millisecond
	type world struct {
		mems   []*redlocktest.MemNode
		handle redlock.Handle // of "held", locked by another client
	}
	tests := []struct {
		name  string
		first func(ctx context.Context, c *redlock.Client, w world) error
	}{
		{"TryLock", func(ctx context.Context, c *redlock.Client, _ world) error {
			_, err := c.TryLock(ctx, "free")
			return err
		}},
		{"Lock", func(ctx context.Context, c *redlock.Client, _ world) error {
			_, err := c.Lock(ctx, "free", redlock.WithTries(1))
			return err
		}},
		{"Lock WithValue", func(ctx context.Context, c *redlock.Client, _ world) error {
			_, err := c.Lock(ctx, "free", redlock.WithTries(1), redlock.WithValue("job-4711-run-aaaaaaaaaaaaaaaa"))
			return err
		}},
		{"Release of a handle", func(ctx context.Context, c *redlock.Client, w world) error {
			if err := c.Release(ctx, w.handle); err != nil {
				return err
			}
			synctest.Wait()
			if n := holding(w.mems, "dlm:lock:held"); n > 0 {
				return fmt.Errorf("released, yet %d of 3 nodes hold the key", n)
			}
			return nil
		}},
		{"Resume of a handle", func(ctx context.Context, c *redlock.Client, w world) error {
			_, err := c.Resume(ctx, w.handle)
			return err
		}},
		{"Inspect", func(ctx context.Context, c *redlock.Client, _ world) error {
			info, err := c.Inspect(ctx, "held")
			if err == nil && info.Mode != redlock.ModeWrite {
				err = fmt.Errorf("held shows as %v", info.Mode)
			}
			for _, v := range info.Nodes {
				if v.Err != nil {
					err = errors.Join(err, v.Err)
				}
			}
			return err
		}},
		{"Locks", func(ctx context.Context, c *redlock.Client, _ world) error {
			infos, complete, err := c.Locks(ctx, 10)
			var names []string
			for _, info := range infos {
				names = append(names, info.Resource)
			}
			if err == nil && (!complete || !slices.Equal(names, []string{"election:db", "held"})) {
				err = fmt.Errorf("listed %q (complete: %v), want the leader's lock and held", names, complete)
			}
			return err
		}},
		{"ForceRelease", func(ctx context.Context, c *redlock.Client, w world) error {
			rep, err := c.ForceRelease(ctx, "held")
			err = errors.Join(append([]error{err}, rep.Errs...)...)
			if n := holding(w.mems, "dlm:lock:held"); err == nil && n > 0 {
				err = fmt.Errorf("released, yet %d of 3 nodes hold the key", n)
			}
			return err
		}},
		{"Leader", func(ctx context.Context, c *redlock.Client, _ world) error {
			e, err := election.New(c, "db")
			if err != nil {
				return err
			}
			got, ok, err := e.Leader(ctx)
			if err == nil && (!ok || got.ID != "a") {
				err = fmt.Errorf("told %q (led: %v), want a", got.ID, ok)
			}
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				for i, m := range mems {
					nodes[i] = m.WithFloor()
				}
				opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithFencing()}
				other, err := redlock.New(nodes, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
				l, err := other.Lock(t.Context(), "held")
				if err != nil {
					t.Fatal(err)
				}
				e, err := election.New(other, "db")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.Campaign(t.Context(), "a"); err != nil {
					t.Fatal(err)
				}
				w := world{mems: mems, handle: l.Handle()}
				synctest.Wait() // the requests still on their way after the quorum land first
				for _, m := range mems[1:] {
					m.SetSlow(late)
				}
				fresh, err := redlock.New(nodes, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer fresh.Close()
				if err := tt.first(t.Context(), fresh, w); err != nil {
					t.Errorf("nodes 2 and 3 healthy but answering %v late (ttl %v): a new client's first %s = %v", late, ttl, tt.name, err)
				}
			})
		})
	}
}
