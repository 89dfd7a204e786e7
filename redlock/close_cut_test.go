package redlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// sendLate is a MemNode whose requests reach it a while after they are
// made, once SetLate set a delay, in the order they were made (as
// AsyncNode promises): a connection still being made, a busy writer. A
// request whose context ends before then never reaches the node (it is
// answered with the context's error), as on a real node: what Close cuts
// short is not done there.
type sendLate struct {
	*redlocktest.MemNode
	w *lateWire
}

// lateWire is a sendLate's delay and the order of its requests.
type lateWire struct {
	mu   sync.Mutex
	d    time.Duration
	last chan struct{} // closed once the request made last reached the node or gave up
}

func newSendLate(m *redlocktest.MemNode) sendLate {
	return sendLate{m, &lateWire{}}
}

// SetLate makes the requests that follow reach the node d after they are
// made (0: as soon as those before them did).
func (n sendLate) SetLate(d time.Duration) {
	n.w.mu.Lock()
	n.w.d = d
	n.w.mu.Unlock()
}

// send runs submit when a request made now reaches the node: after the
// delay, and after the requests made before it. It returns ctx's error,
// without running submit, if ctx ends first.
func (n sendLate) send(ctx context.Context, submit func()) error {
	return n.enter()(ctx, submit)
}

// enter takes a request's place on the wire, now, and returns what sends
// it (send).
func (n sendLate) enter() func(ctx context.Context, submit func()) error {
	n.w.mu.Lock()
	d, prev, mine := n.w.d, n.w.last, make(chan struct{})
	n.w.last = mine
	n.w.mu.Unlock()
	return func(ctx context.Context, submit func()) error {
		return sendAfter(ctx, d, prev, mine, submit)
	}
}

// sendAfter runs submit after d and once prev is closed, then closes
// mine; if ctx ends first, it returns ctx's error, and mine is closed
// once prev is.
func sendAfter(ctx context.Context, d time.Duration, prev, mine chan struct{}, submit func()) error {
	after := func() {
		if prev != nil {
			<-prev
		}
		close(mine)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		go after() // the requests after it wait for those before it
		return ctx.Err()
	case <-t.C:
	}
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			go after()
			return ctx.Err()
		}
	}
	submit()
	close(mine)
	return nil
}

func (n sendLate) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	send := n.enter()
	go func() {
		if err := send(ctx, func() { n.MemNode.Start(ctx, req, to, tag) }); err != nil {
			to.Receive(tag, false, err)
		}
	}()
}

func (n sendLate) StartAll(calls []adapter.Call) {
	for _, c := range calls {
		n.Start(c.Ctx, c.Req, c.To, c.Tag)
	}
}

// blocking runs a blocking method of the MemNode once the request
// reaches it (send).
func blocking[T any](ctx context.Context, n sendLate, do func() (T, error)) (T, error) {
	var v T
	var err error
	if serr := n.send(ctx, func() { v, err = do() }); serr != nil {
		return v, serr
	}
	return v, err
}

func (n sendLate) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return blocking(ctx, n, func() (bool, error) { return n.MemNode.Acquire(ctx, key, value, ttl) })
}

func (n sendLate) Release(ctx context.Context, key, value string) (bool, error) {
	return blocking(ctx, n, func() (bool, error) { return n.MemNode.Release(ctx, key, value) })
}

func (n sendLate) ReleaseAll(ctx context.Context, keys []string, value string, announce bool) (bool, error) {
	return blocking(ctx, n, func() (bool, error) { return n.MemNode.ReleaseAll(ctx, keys, value, announce) })
}

func (n sendLate) RRelease(ctx context.Context, key, value string) (bool, error) {
	return blocking(ctx, n, func() (bool, error) { return n.MemNode.RRelease(ctx, key, value) })
}

func (n sendLate) PutNote(ctx context.Context, key, note string, ttl time.Duration) error {
	_, err := blocking(ctx, n, func() (struct{}, error) { return struct{}{}, n.MemNode.PutNote(ctx, key, note, ttl) })
	return err
}

// A new client (every dlm command) releases a lock by its handle and
// closes: one node of three gets the release 200 ms after the two others,
// well within the release timeout (1 s), after the quorum confirmed it.
// Close must let that request live its normal bound, as a long-lived
// client's Close does, so that the node does not keep the key until its
// ttl. Before the fix, Close cut the request short (a new client's
// release waits for the nodes it never met a grant's patience, and Close
// ended the whole wait, the normal bound with it): dlm release of a set
// exited 0 and left both keys on one node (cmd/dlm's TestHandleSet, now
// and then on a loaded machine). In memory, under synctest.
func TestNewClientsReleaseOutlivesItsQuorumUntilClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 30 * time.Second
		nodes, mems := redlocktest.NewMemNodes(3)
		late := newSendLate(mems[2])
		nodes[2] = late
		holder, err := redlock.New(nodes, redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		l, err := holder.LockAll(t.Context(), []string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		h := l.Handle()
		synctest.Wait()
		late.SetLate(200 * time.Millisecond)
		c, err := redlock.New(nodes, redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Release(t.Context(), h); err != nil {
			t.Fatalf("Release of the set's handle = %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for _, key := range []string{"dlm:lock:a", "dlm:lock:b"} {
			if _, held, _ := mems[2].Value(context.Background(), key); held {
				t.Errorf("a new client's Release returned nil and Close returned, and m3 (reached 200 ms late, release timeout 1 s) still holds %s", key)
			}
		}
	})
}

// closeCutCase is one request of a new client that outlives its caller or
// runs at Close (TestEveryRequestOfANewClientWithinItsBoundOutlivesClose):
// setup runs with every node reached at once (holder: a client that met
// every node), call with m3 reached late, and want checks m3 after Close.
type closeCutCase struct {
	name  string
	setup func(ctx context.Context, holder *redlock.Client, mems []*redlocktest.MemNode) (redlock.Handle, error)
	call  func(ctx context.Context, c *redlock.Client, h redlock.Handle) error
	// held: the lock keys m3 must hold afterwards (none: every one of
	// "dlm:lock:r", "a", "b" is gone); marked: m3 keeps a release marker.
	held   []string
	marked bool
	// lives: m3's key of r must live longer than this after Close (an
	// extension reached it).
	lives time.Duration
}

func closeCutCases() []closeCutCase {
	holderLock := func(ctx context.Context, holder *redlock.Client, _ []*redlocktest.MemNode) (redlock.Handle, error) {
		l, err := holder.Lock(ctx, "r")
		if err != nil {
			return redlock.Handle{}, err
		}
		return l.Handle(), nil
	}
	holderSet := func(ctx context.Context, holder *redlock.Client, _ []*redlocktest.MemNode) (redlock.Handle, error) {
		l, err := holder.LockAll(ctx, []string{"a", "b"})
		if err != nil {
			return redlock.Handle{}, err
		}
		return l.Handle(), nil
	}
	release := func(ctx context.Context, c *redlock.Client, h redlock.Handle) error { return c.Release(ctx, h) }
	lockUnlock := func(lock func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error)) func(ctx context.Context, c *redlock.Client, _ redlock.Handle) error {
		return func(ctx context.Context, c *redlock.Client, _ redlock.Handle) error {
			l, err := lock(ctx, c)
			if err != nil {
				return err
			}
			return l.Unlock(ctx)
		}
	}
	return []closeCutCase{
		{name: "Release by handle", setup: holderLock, call: release, marked: true},
		{name: "Release of a set's handle", setup: holderSet, call: release, marked: true},
		{name: "ForceRelease", setup: holderLock, call: func(ctx context.Context, c *redlock.Client, _ redlock.Handle) error {
			_, err := c.ForceRelease(ctx, "r")
			return err
		}, marked: true},
		{name: "Unlock", call: lockUnlock(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.Lock(ctx, "r") })},
		{name: "Unlock of a set", call: lockUnlock(func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
			return c.LockAll(ctx, []string{"a", "b"})
		})},
		{name: "Unlock of a resumed lock", setup: holderLock, call: func(ctx context.Context, c *redlock.Client, h redlock.Handle) error {
			l, err := c.Resume(ctx, h)
			if err != nil {
				return err
			}
			return l.Unlock(ctx)
		}},
		{name: "a failed attempt's release", setup: func(ctx context.Context, _ *redlock.Client, mems []*redlocktest.MemNode) (redlock.Handle, error) {
			// m1 holds r for another, m2 is down: the attempt fails
			// before m3 grants it, and m3's key must be released.
			mems[1].SetDown(true)
			return redlock.Handle{}, mems[0].Put(ctx, "dlm:lock:r", "another")
		}, call: func(ctx context.Context, c *redlock.Client, _ redlock.Handle) error {
			if _, err := c.TryLock(ctx, "r"); err == nil {
				return errors.New("TryLock granted with m1 held by another and m2 down")
			}
			return nil
		}},
		{name: "a resumed lock left held", setup: holderLock, call: func(ctx context.Context, c *redlock.Client, h redlock.Handle) error {
			_, err := c.Resume(ctx, h)
			return err
		}, held: []string{"dlm:lock:r"}},
		// dlm extend: a resumed lock extended to a longer ttl, left held.
		{name: "an extension by handle", setup: holderLock, call: func(ctx context.Context, c *redlock.Client, h redlock.Handle) error {
			_, err := c.Resume(ctx, h, redlock.WithTTL(10*time.Minute))
			return err
		}, held: []string{"dlm:lock:r"}, lives: time.Minute},
	}
}

// Every request of a new client (every dlm command) that outlives its
// caller or runs at Close, with one node of three reached 200 ms after the
// two others (within its own bound: the node timeout's limit, 1 s, and the
// release timeout, 1 s), reaches that node: after Close returned, the node
// holds what the request meant (no key after a release of any kind, the
// release marker, the resumed lock's key). Close gives up only the
// patience a new client grants the nodes it never met, never a request
// within its own bound, as a long-lived client's Close waits for it.
// Before the fix, the releases by handle and the Unlocks left their keys
// on m3 (Close ended their requests there at once). In memory, under
// synctest.
func TestEveryRequestOfANewClientWithinItsBoundOutlivesClose(t *testing.T) {
	for _, tc := range closeCutCases() {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = 30 * time.Second
				ctx := t.Context()
				nodes, mems := redlocktest.NewMemNodes(3)
				late := newSendLate(mems[2])
				nodes[2] = late
				holder, err := redlock.New(nodes, redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				var h redlock.Handle
				if tc.setup != nil {
					if h, err = tc.setup(ctx, holder, mems); err != nil {
						t.Fatalf("setup: %v", err)
					}
				}
				synctest.Wait()
				late.SetLate(200 * time.Millisecond)
				c, err := redlock.New(nodes, redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.call(ctx, c, h); err != nil {
					t.Fatalf("%s with m3 reached 200 ms late = %v", tc.name, err)
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				// Close returned: nothing of c is on its way any more.
				late.SetLate(0)
				synctest.Wait()
				for _, key := range []string{"dlm:lock:r", "dlm:lock:a", "dlm:lock:b"} {
					_, held, _ := mems[2].Value(context.Background(), key)
					if want := slices.Contains(tc.held, key); held != want {
						t.Errorf("%s by a new client, then Close, m3 reached 200 ms late (within its bound): m3 holds %s: %v, want %v", tc.name, key, held, want)
					}
				}
				if tc.lives > 0 {
					if ttl, _, _ := mems[2].TTL(context.Background(), "dlm:lock:r"); ttl <= tc.lives {
						t.Errorf("%s by a new client, then Close, m3 reached 200 ms late (within its bound): m3's key lives %v more, want the extension (over %v)", tc.name, ttl, tc.lives)
					}
				}
				if tc.marked {
					if keys, _ := mems[2].Keys(context.Background(), redlock.DefaultInfoPrefix+"rel:"); len(keys) == 0 {
						t.Errorf("%s by a new client, then Close: m3 (reached 200 ms late) keeps no release marker", tc.name)
					}
				}
			})
		})
	}
}

// Close ends the restore that an extension's late "not held" began, as it
// ends the extension's requests: m3 forgot the lock, answers the
// extension 300 ms late (after the quorum), and is frozen before the
// restore reaches it. Close must return at once, not wait out the
// restore's bound for the frozen node (it did in this change's first
// form, where the restore's context no longer ended at Close: 950ms).
func TestCloseEndsALateRestore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		defer mems[2].Thaw()
		c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.Lock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mems[2].Forget()
		mems[2].SetSlow(300 * time.Millisecond)
		if err := l.Extend(t.Context()); err != nil {
			t.Fatalf("Extend with m1 and m2 holding the lock = %v", err)
		}
		time.Sleep(250 * time.Millisecond)
		mems[2].Freeze() // the extension was applied: its answer still comes
		time.Sleep(100 * time.Millisecond)
		synctest.Wait() // the restore is on its way to the frozen m3
		start := time.Now()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 0 {
			t.Errorf("Close took %v, waiting for the restore of the frozen m3; want at once", d)
		}
	})
}
