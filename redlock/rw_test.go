package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Read-write locks over redlocktest.MemNode inside testing/synctest
// bubbles: fake time, so the waits are exact and independent of the
// machine's load.

func TestRWReadersShareWritersExclude(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes)
		ctx := t.Context()
		var readers []*redlock.Lock
		for i := range 3 {
			r, err := c.TryRLock(ctx, "doc")
			if err != nil {
				t.Fatalf("reader %d: %v", i, err)
			}
			if !r.Shared() {
				t.Fatalf("reader %d: Shared() = false", i)
			}
			readers = append(readers, r)
		}
		if _, err := c.TryWLock(ctx, "doc"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryWLock while readers hold: err = %v, want ErrNotAcquired", err)
		}
		if _, err := c.TryLock(ctx, "doc"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock while readers hold: err = %v, want ErrNotAcquired", err)
		}
		for i, r := range readers {
			if err := r.Extend(ctx); err != nil {
				t.Fatalf("Extend of reader %d: %v", i, err)
			}
			if err := r.Unlock(ctx); err != nil {
				t.Fatalf("Unlock of reader %d: %v", i, err)
			}
		}
		w, err := c.TryWLock(ctx, "doc")
		if err != nil {
			t.Fatalf("TryWLock once the readers left: %v", err)
		}
		if w.Shared() {
			t.Fatal("writer: Shared() = true")
		}
		if _, err := c.TryRLock(ctx, "doc"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryRLock while a writer holds: err = %v, want ErrNotAcquired", err)
		}
		if _, err := c.TryLock(ctx, "doc"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock while a writer holds: err = %v, want ErrNotAcquired", err)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of the writer: %v", err)
		}
		p, err := c.TryLock(ctx, "doc")
		if err != nil {
			t.Fatalf("TryLock after the writer: %v", err)
		}
		if _, err := c.TryRLock(ctx, "doc"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryRLock while a plain lock holds: err = %v, want ErrNotAcquired", err)
		}
		_ = p.Unlock(ctx)
	})
}

// Readers and a writer each hold a quorum, and any two quorums share a node,
// where the node's script forbids both: readers granted with two nodes down
// keep the writer out once the nodes are back, and the other way round.
func TestRWExcludeOnAQuorum(t *testing.T) {
	for _, first := range []string{"readers", "writer"} {
		t.Run(first+" first", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				c := memClient(t, nodes)
				ctx := t.Context()
				mems[3].SetDown(true)
				mems[4].SetDown(true)
				var err error
				if first == "readers" {
					_, err = c.TryRLock(ctx, "q")
				} else {
					_, err = c.TryWLock(ctx, "q")
				}
				if err != nil {
					t.Fatalf("%s on nodes m1..m3: %v", first, err)
				}
				mems[3].SetDown(false)
				mems[4].SetDown(false)
				mems[0].SetDown(true) // m2, m3 still hold; m4, m5 are free
				if first == "readers" {
					_, err = c.TryWLock(ctx, "q")
				} else {
					_, err = c.TryRLock(ctx, "q")
				}
				if !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("the other side on m2..m5: err = %v, want ErrNotAcquired", err)
				}
			})
		})
	}
}

// A continuous stream of readers, three at a time, each holding 300ms and
// coming back at once, so that some reader always holds the resource: a
// writer that retries without leaving its mark (TryWLock in a loop) never
// gets in, while WLock's marks stop new readers and it gets in as soon as
// the readers already there leave (at most one hold plus one retry delay).
func TestRWWriterNotStarvedByReaders(t *testing.T) {
	const hold = 300 * time.Millisecond
	stream := func(t *testing.T, c *redlock.Client, stop <-chan struct{}, wg *sync.WaitGroup) {
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i) * hold / 3)
				for {
					select {
					case <-stop:
						return
					default:
					}
					r, err := c.RLock(context.Background(), "feed", redlock.WithTries(50))
					if err != nil {
						continue
					}
					time.Sleep(hold)
					_ = r.Unlock(context.Background())
				}
			}()
		}
	}
	t.Run("WLock gets in", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			nodes, _ := redlocktest.NewMemNodes(5)
			c := memClient(t, nodes, redlock.WithTTL(2*time.Second))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			stream(t, c, stop, &wg)
			time.Sleep(time.Second) // fake time: the stream runs
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			w, err := c.WLock(ctx, "feed")
			waited := time.Since(start)
			if err != nil {
				t.Fatalf("WLock under a stream of readers: %v after %v", err, waited)
			}
			if bound := hold + redlock.DefaultRetryMax; waited > bound {
				t.Fatalf("WLock waited %v, want at most one hold and one retry delay (%v)", waited, bound)
			}
			_ = w.Unlock(ctx)
			close(stop)
			wg.Wait()
		})
	})
	t.Run("TryWLock in a loop starves", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			nodes, _ := redlocktest.NewMemNodes(5)
			c := memClient(t, nodes, redlock.WithTTL(2*time.Second))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			stream(t, c, stop, &wg)
			time.Sleep(time.Second)
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(redlock.DefaultRetryMin) {
				if w, err := c.TryWLock(t.Context(), "feed"); err == nil {
					_ = w.Unlock(t.Context())
					t.Fatal("TryWLock got in between readers: the stream is not continuous, and the WLock case proves nothing")
				}
			}
			close(stop)
			wg.Wait()
		})
	})
}

// A WLock whose context ends removes its waiting marks from every node: a
// reader gets in at once, not one ttl later.
func TestRWWaitingMarkRemovedOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes, redlock.WithTTL(10*time.Second))
		r, err := readerThenWriterGivingUp(t, c, 500*time.Millisecond)
		if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WLock behind a reader with a 500ms context: err = %v, want ErrNotAcquired and DeadlineExceeded", err)
		}
		for _, m := range mems {
			if _, waiters := m.Readers(redlock.DefaultKeyPrefix + "m"); len(waiters) > 0 {
				t.Fatalf("%s: waiting marks %v left after WLock returned", m, waiters)
			}
		}
		r2, err := c.TryRLock(t.Context(), "m")
		if err != nil {
			t.Fatalf("TryRLock after the writer gave up: %v", err)
		}
		_ = r.Unlock(t.Context())
		_ = r2.Unlock(t.Context())
	})
}

// readerThenWriterGivingUp takes a reader's lock on resource "m" over c,
// then a WLock of "m" whose context ends d later, and returns the reader's
// lock and the WLock's error.
func readerThenWriterGivingUp(t *testing.T, c *redlock.Client, d time.Duration) (*redlock.Lock, error) {
	t.Helper()
	r, err := c.TryRLock(t.Context(), "m")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	_, err = c.WLock(ctx, "m")
	return r, err
}

// lateMarkNode is a MemNode whose writer's requests reach it late, after
// the caller's context may have ended: a request on its way, which the
// context no longer stops (over redis-server, a goroutine that passed its
// context check and was descheduled before it wrote the request).
type lateMarkNode struct {
	*redlocktest.MemNode
	late time.Duration
}

func (n lateMarkNode) WAcquire(_ context.Context, key, value, waiter string, ttl time.Duration) (bool, error) {
	time.Sleep(n.late) // fake time: the request on its way
	return n.MemNode.WAcquire(context.Background(), key, value, waiter, ttl)
}

// A WLock whose context ended while an attempt's requests were on their
// way removes its marks after those requests landed, not before them: a
// mark request landing after the removal left the mark for a ttl. Over
// redis-server under load the last attempt's requests could reach the
// nodes after the removal (TestRWWaitingMarkRemovedOverRedis with a 5 s
// node timeout: "TryRLock after the writer gave up: ... 127.0.0.1:42065
// held by another, 127.0.0.1:43069 held by another").
func TestRWWaitingMarkRemovedAfterLateAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, mems := redlocktest.NewMemNodes(3)
		nodes := make([]redlock.Node, len(mems))
		for i, m := range mems {
			nodes[i] = lateMarkNode{MemNode: m, late: 200 * time.Millisecond}
		}
		c := memClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
		// The first attempt is answered at 200ms, the second is on its
		// way when the context ends at 300ms, and lands at about 400ms.
		r, err := readerThenWriterGivingUp(t, c, 300*time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WLock behind a reader: %v, want DeadlineExceeded", err)
		}
		time.Sleep(time.Second) // every request has landed
		synctest.Wait()
		for _, m := range mems {
			if _, waiters := m.Readers(redlock.DefaultKeyPrefix + "m"); len(waiters) > 0 {
				t.Errorf("%s: waiting marks %v left after WLock returned: a mark request landed after their removal", m, waiters)
			}
		}
		_ = r.Unlock(t.Context())
	})
}

// A WLock whose context's deadline passed while an attempt was on its way
// returns once the nodes answered the removal of its marks (or one node
// timeout later), also when the context's timer has not run yet (a loaded
// machine runs timers late): the call then ended on the deadline, and the
// wait for the removal's answers ended at once with the context, a moment
// later. Over redis-server: "TryRLock after the writer gave up ...: held by
// another (marks gone true 429µs later)" in 1 of 15-30 runs at load 17-28.
func TestRWWaitingMarksGoneWhenWLockReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		for _, m := range mems {
			m.SetSlow(200 * time.Millisecond)
		}
		c := memClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
		r, err := readerThenWriterGivingUp(t, c, 300*time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WLock behind a reader: %v, want DeadlineExceeded", err)
		}
		for _, m := range mems {
			if _, waiters := m.Readers(redlock.DefaultKeyPrefix + "m"); len(waiters) > 0 {
				t.Errorf("%s: waiting marks %v left when WLock returned", m, waiters)
			}
		}
		_ = r.Unlock(t.Context())
	})
}

// A writer granted after waiting removes its marks from the nodes where it
// failed, so readers are not kept out of those nodes after its Unlock.
func TestRWWaitingMarkRemovedOnGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes, redlock.WithTTL(10*time.Second))
		key := redlock.DefaultKeyPrefix + "g"
		// A reader on m1, m2 only (planted): the writer gets m3..m5 and
		// leaves its mark on m1, m2.
		for _, m := range mems[:2] {
			if ok, err := m.RAcquire(t.Context(), key, "stray", 10*time.Second); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		w, err := c.WLock(t.Context(), "g")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mems {
			if _, waiters := m.Readers(key); len(waiters) > 0 {
				t.Fatalf("%s: waiting marks %v left after WLock was granted", m, waiters)
			}
		}
		_ = w.Unlock(t.Context())
	})
}

// A reader that never unlocks (its process died) holds nothing past its
// ttl: a writer gets in after it.
func TestRWCrashedReaderExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes)
		if _, err := c.TryRLock(t.Context(), "x", redlock.WithTTL(time.Second)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		w, err := c.WLock(t.Context(), "x", redlock.WithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < time.Second-drift(time.Second) || waited > time.Second+redlock.DefaultRetryMax {
			t.Fatalf("writer waited %v for a reader of ttl 1s", waited)
		}
		_ = w.Unlock(t.Context())
	})
}

// A read lock with WithAutoExtend is kept past its ttl, and its loss is
// noticed as for Lock.
func TestRWReaderAutoExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes)
		r, err := c.RLock(t.Context(), "a", redlock.WithTTL(time.Second), redlock.WithAutoExtend())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if err := r.Err(); err != nil {
			t.Fatalf("reader lost after 5 ttls of auto-extension: %v", err)
		}
		if _, err := c.TryWLock(t.Context(), "a"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryWLock beside an auto-extended reader: %v", err)
		}
		for _, m := range mems {
			m.Forget() // every node restarts without persistence
		}
		select {
		case <-r.Done():
		case <-time.After(2 * time.Second):
			t.Fatal("the reader's loss was not noticed within a ttl")
		}
		if !errors.Is(r.Err(), redlock.ErrLost) {
			t.Fatalf("Err = %v, want ErrLost", r.Err())
		}
	})
}

// Node faults: readers and writers need a quorum like any lock.
func TestRWNodeFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes)
		mems[0].SetDown(true)
		mems[1].Freeze()
		r, err := c.TryRLock(t.Context(), "f")
		if err != nil {
			t.Fatalf("TryRLock with one node down and one frozen: %v", err)
		}
		if err := r.Unlock(t.Context()); err != nil {
			t.Fatalf("Unlock with one node down and one frozen: %v", err)
		}
		mems[2].SetDown(true)
		for _, try := range []func(context.Context, string, ...redlock.LockOption) (*redlock.Lock, error){c.TryRLock, c.TryWLock} {
			if _, err := try(t.Context(), "f"); !errors.Is(err, redlock.ErrNoQuorum) {
				t.Fatalf("with three of five nodes out: err = %v, want ErrNoQuorum", err)
			}
		}
		mems[1].Thaw()
		synctest.Wait() // the late answers of m2 and their releases (R8.5)
		for _, m := range mems {
			if rs, ws := m.Readers(redlock.DefaultKeyPrefix + "f"); len(rs)+len(ws) > 0 {
				t.Fatalf("%s: readers %v, marks %v left by failed attempts", m, rs, ws)
			}
		}
	})
}

func TestRWBadInput(t *testing.T) {
	nodes, _ := redlocktest.NewMemNodes(3)
	mixed, err := redlock.New([]redlock.Node{nodes[0], plainNode{nodes[1]}, nodes[2]})
	if err != nil {
		t.Fatal(err)
	}
	defer mixed.Close()
	ok, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	ctx := context.Background()
	tests := []struct {
		name string
		lock func() (*redlock.Lock, error)
		want string
	}{
		{"node without RWNode", func() (*redlock.Lock, error) { return mixed.WLock(ctx, "r") }, `position 1`},
		{"empty resource", func() (*redlock.Lock, error) { return ok.TryRLock(ctx, "") }, "empty resource"},
		{"bad ttl", func() (*redlock.Lock, error) { return ok.TryWLock(ctx, "r", redlock.WithTTL(-1)) }, "ttl must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tc.lock()
			if l != nil || !errors.Is(err, redlock.ErrInvalid) || !contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want an ErrInvalid naming %q", l, err, tc.want)
			}
		})
	}
	for _, m := range nodes {
		if keys, _ := m.(*redlocktest.MemNode).Keys(ctx, ""); len(keys) > 0 {
			t.Fatalf("%s: keys %v left by refused calls", m, keys)
		}
	}
}

// With WithFencing, writers get fencing tokens from the same sequence as
// plain locks (R18), strictly increasing across both; readers get 0 and
// leave the fence alone.
func TestRWFencing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes, redlock.WithFencing())
		ctx := t.Context()
		var last uint64
		for i, lock := range []func(context.Context, string, ...redlock.LockOption) (*redlock.Lock, error){c.WLock, c.Lock, c.WLock, c.TryWLock} {
			l, err := lock(ctx, "f")
			if err != nil {
				t.Fatalf("grant %d: %v", i, err)
			}
			if l.Token() <= last {
				t.Fatalf("grant %d: token %d, want above the previous %d", i, l.Token(), last)
			}
			last = l.Token()
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r, err := c.RLock(ctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		if r.Token() != 0 {
			t.Fatalf("reader's token = %d, want 0", r.Token())
		}
		at := 0 // the fence is a quorum max-register: a quorum holds the last token
		for _, m := range mems {
			f, err := m.Fence(ctx, redlock.DefaultFencePrefix+"f")
			if err != nil || f > last {
				t.Fatalf("%s: fence %d, %v after a reader; want at most the last writer's %d", m, f, err, last)
			}
			if f == last {
				at++
			}
		}
		if at < c.Quorum() {
			t.Fatalf("%d nodes hold the last token %d, want a quorum (%d)", at, last, c.Quorum())
		}
		// A writer waiting behind the reader gets the next token.
		got := make(chan *redlock.Lock, 1)
		go func() {
			w, err := c.WLock(ctx, "f")
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
		synctest.Wait() // the writer failed its first attempt, left its marks, and sleeps
		_ = r.Unlock(ctx)
		w := <-got
		if w == nil || w.Token() != last+1 {
			t.Fatalf("waiting writer: %v, want token %d", w, last+1)
		}
		_ = w.Unlock(ctx)
	})
}
