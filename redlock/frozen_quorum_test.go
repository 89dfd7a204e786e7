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

// One node of three frozen, the two others healthy and fast: a new client
// (dlm extend HANDLE) resumes a lock whose handle has some of its ttl left.
// The extension count is read from a quorum of nodes that answered, not
// from every node: the frozen node's read is not waited for a grant's
// patience while the handle's validity runs out.
func TestNewClientsResumeOverAFrozenNodeKeepsTheLock(t *testing.T) {
	for _, c := range []struct {
		ttl, work time.Duration
	}{
		{10 * time.Second, 0}, {10 * time.Second, 5 * time.Second}, {10 * time.Second, 20 * time.Second / 3},
		{30 * time.Second, 20 * time.Second},
	} {
		ttl := c.ttl
		t.Run(fmt.Sprintf("ttl %v, %v after the grant", c.ttl, c.work), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				_, _, h := handleOfR(t, nodes, ttl)
				time.Sleep(c.work) // the script's work
				mems[2].Freeze()
				defer mems[2].Thaw()
				fresh, err := redlock.New(nodes, redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer fresh.Close()
				left := time.Until(h.Until)
				start := time.Now()
				r, err := fresh.Resume(context.Background(), h)
				took := time.Since(start)
				if err != nil {
					t.Fatalf("ttl %v, m3 frozen, m1 and m2 healthy and holding the lock with %v left: a new client's Resume (dlm extend HANDLE) = %v after %v",
						ttl, left.Round(time.Millisecond), err, took.Round(time.Millisecond))
				}
				if took > 2*time.Second {
					t.Errorf("ttl %v, m3 frozen: a new client's Resume took %v, want within a few node timeouts", ttl, took.Round(time.Millisecond))
				}
				_ = r.Unlock(context.Background())
			})
		})
	}
}

// A lock whose handle was taken (it may live on in another process) over 3
// nodes: m1 fast, m2 answering 1.5 s late (the client knows it is slow),
// m3 frozen. The crossed Unlock keeps a release marker on every node before
// its release, and so does a new client's Release of the handle: each
// releases the lock within a few of m2's round trips, rather than waiting
// for the frozen node's marker until the lock expired by itself.
func TestReleaseMarkersDoNotWaitOutAFrozenNode(t *testing.T) {
	for _, how := range []string{"Unlock of a lock whose handle was taken", "Release of its handle by a new client"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl, slow = 10 * time.Second, 1500 * time.Millisecond
				nodes, mems := redlocktest.NewMemNodes(3)
				c, err := redlock.New(nodes, redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l, err := c.Lock(t.Context(), "r")
				if err != nil {
					t.Fatal(err)
				}
				_ = l.Handle()
				synctest.Wait()
				mems[1].SetSlow(slow)
				mems[2].Freeze()
				defer mems[2].Thaw()
				// The holder learns that m2 is slow (its first extension
				// over it may stop at the limit).
				for range 2 {
					_ = l.Extend(context.Background())
				}
				h := l.Handle()
				left := time.Until(h.Until)
				start := time.Now()
				if how[0] == 'U' {
					err = l.Unlock(context.Background())
				} else {
					fresh, ferr := redlock.New(nodes, redlock.WithTTL(ttl))
					if ferr != nil {
						t.Fatal(ferr)
					}
					defer fresh.Close()
					err = fresh.Release(context.Background(), h)
				}
				took := time.Since(start)
				if err != nil || took > 3*slow+time.Second {
					t.Errorf("m2 answering %v late, m3 frozen (ttl %v, validity left %v): %s = %v after %v, want nil within a few of m2's round trips",
						slow, ttl, left.Round(time.Millisecond), how, err, took.Round(time.Millisecond))
				}
			})
		})
	}
}
