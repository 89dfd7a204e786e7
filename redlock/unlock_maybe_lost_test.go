package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Unlock's verdict when too few nodes confirm the release: a node that
// granted the lock and now answers that it holds another value means the
// lock may have been lost while it was held (another client may have run
// beside its holder), and the error says so (ErrMaybeLost) beside
// ErrUnlockFailed. A node that never granted it answers "not held" as a
// matter of course: then the release is merely unconfirmed.
func TestUnlockSaysWhenTheLockMayHaveBeenLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs between the grant and the Unlock, on the nodes.
		setup     func(mems []*redlocktest.MemNode)
		acquireOn []int // nodes up at the acquisition (the others down)
		maybeLost bool
		failed    bool
	}{
		{name: "a granting node taken by another client, one frozen", acquireOn: []int{0, 1, 2},
			setup: func(mems []*redlocktest.MemNode) {
				_ = mems[1].Put(context.Background(), "dlm:lock:r", "another client's value")
				mems[2].Freeze()
			}, maybeLost: true, failed: true},
		{name: "a granting node flushed, one frozen", acquireOn: []int{0, 1, 2},
			setup: func(mems []*redlocktest.MemNode) {
				mems[1].Forget()
				mems[2].Freeze()
			}, maybeLost: true, failed: true},
		{name: "a node that never granted, one frozen", acquireOn: []int{0, 2},
			setup: func(mems []*redlocktest.MemNode) {
				mems[2].Freeze()
			}, failed: true},
		{name: "one frozen", acquireOn: []int{0, 1, 2},
			setup: func(mems []*redlocktest.MemNode) {
				mems[1].Freeze()
				mems[2].Freeze()
			}, failed: true},
		{name: "a granting node taken, a quorum releases", acquireOn: []int{0, 1, 2},
			setup: func(mems []*redlocktest.MemNode) {
				_ = mems[1].Put(context.Background(), "dlm:lock:r", "another client's value")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				up := map[int]bool{}
				for _, i := range tc.acquireOn {
					up[i] = true
				}
				for i, m := range mems {
					m.SetDown(!up[i])
				}
				c, err := redlock.New(nodes, redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(time.Second))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l, err := c.Lock(t.Context(), "r")
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				for _, m := range mems {
					m.SetDown(false)
				}
				tc.setup(mems)
				defer func() {
					for _, m := range mems {
						if m.Frozen() {
							m.Thaw()
						}
					}
				}()
				err = l.Unlock(context.Background())
				if got := errors.Is(err, redlock.ErrMaybeLost); got != tc.maybeLost {
					t.Errorf("Unlock = %v: errors.Is(err, ErrMaybeLost) = %v, want %v", err, got, tc.maybeLost)
				}
				if got := errors.Is(err, redlock.ErrUnlockFailed); got != tc.failed {
					t.Errorf("Unlock = %v: errors.Is(err, ErrUnlockFailed) = %v, want %v", err, got, tc.failed)
				}
			})
		})
	}
}
