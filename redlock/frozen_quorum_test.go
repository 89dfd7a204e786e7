package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// One node of three frozen since before the client was made (every dlm
// command is a new client; so is a candidate started after the freeze),
// the two others healthy and fast: a quorum is there. A lock of every kind
// is granted at once by m1 and m2, and its Unlock releases it there at
// once: the frozen node's acquisition request, which a new client gives a
// grant's patience (ttl/2 - drift), is not waited for before the releases
// of the nodes that answered; its release follows its answer.
func TestUnlockReleasesTheQuorumAtOnceOverANodeFrozenSinceBirth(t *testing.T) {
	for _, kind := range []string{"plain", "fenced", "read"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = 10 * time.Second
				nodes, mems := redlocktest.NewMemNodes(3)
				for i, m := range mems {
					nodes[i] = m.WithFloor()
				}
				mems[2].Freeze()
				defer mems[2].Thaw()
				opts := []redlock.Option{redlock.WithTTL(ttl)}
				if kind == "fenced" {
					opts = append(opts, redlock.WithFencing())
				}
				holder, err := redlock.New(nodes, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				var l *redlock.Lock
				if kind == "read" {
					l, err = holder.RLock(t.Context(), "r")
				} else {
					l, err = holder.Lock(t.Context(), "r")
				}
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				unlocked := make(chan time.Duration, 1)
				go func() {
					_ = l.Unlock(context.Background())
					unlocked <- time.Since(start)
				}()
				time.Sleep(time.Second)
				synctest.Wait()
				held := 0
				for _, m := range mems[:2] {
					_, ok, _ := m.Value(context.Background(), "dlm:lock:r")
					if readers, _ := m.Readers("dlm:lock:r"); ok || len(readers) > 0 {
						held++
					}
				}
				if held > 0 {
					t.Errorf("%s lock, m3 frozen since the client was made, m1 and m2 fast: 1s after its Unlock began, %d of the 2 healthy nodes still hold it (Unlock returned after %v)",
						kind, held, (<-unlocked).Round(time.Millisecond))
				}
			})
		})
	}
}

// A new client's write lock of a free resource over one node of three
// frozen since before the client was made (m1, m2 fast) is granted at
// once, as a plain lock is: the removal of the writer's waiting mark does
// not wait for the frozen node's requests.
func TestNewClientsWLockOfAFreeResourceIgnoresAFrozenNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		nodes, mems := redlocktest.NewMemNodes(3)
		mems[2].Freeze()
		defer mems[2].Thaw()
		c, err := redlock.New(nodes, redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		l, err := c.WLock(t.Context(), "r")
		took := time.Since(start)
		if err != nil {
			t.Fatalf("WLock = %v after %v", err, took)
		}
		defer func() { _ = l.Unlock(context.Background()) }()
		if took > time.Second {
			t.Errorf("nobody holds r, m3 frozen since the client was made, m1 and m2 fast (ttl %v): WLock granted after %v, want within a second (a plain Lock: at once)", ttl, took.Round(time.Millisecond))
		}
	})
}
