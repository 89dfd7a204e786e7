package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// The review of the kept hand-over (handoff.go: keep): each test
// tries to make a lock that Unlock passes on as it is (same value, same
// Until, no node asked) serve two holders, outlive its keys, or leave keys
// behind.

// keepWaiter starts a Lock call of c for resource r with opts, lets it fail
// its first attempt and queue (fake time), and returns the channel of its
// result.
func keepWaiter(ctx context.Context, c *redlock.Client, r string, opts ...redlock.LockOption) <-chan keepResult {
	got := make(chan keepResult, 1)
	go func() {
		l, err := c.Lock(ctx, r, opts...)
		got <- keepResult{l, err}
	}()
	time.Sleep(10 * time.Millisecond) // fake time: the waiter failed and is queued
	return got
}

type keepResult struct {
	l   *redlock.Lock
	err error
}

// handTo queues a Lock call of c on r, unlocks l and returns the lock the
// waiter got (unlocked at the end of the test).
func handTo(t *testing.T, c *redlock.Client, l *redlock.Lock, r string) *redlock.Lock {
	t.Helper()
	got := keepWaiter(t.Context(), c, r)
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := <-got
	if w.err != nil {
		t.Fatal(w.err)
	}
	t.Cleanup(func() { _ = w.l.Unlock(context.Background()) })
	return w.l
}

// A record published with PutRecord names the holder that published it:
// PutRecord promises that a reader gets it "never after the lock ...
// passed to another holder". A kept hand-over gives the next holder the
// same value, to which the record is bound, so readers would take the
// first holder's record for the second's. Before the fix (PutRecord marks
// the value as known outside, as Value and Handle do) the waiter kept the
// lock and every node reported the first holder's record.
func TestKeepPublishedRecordIsNotPassedOn(t *testing.T) { // R4, R18
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes, redlock.WithHandoffKeep())
		ctx := t.Context()
		a, err := c.Lock(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.PutRecord(ctx, "holder A"); err != nil {
			t.Fatal(err)
		}
		handTo(t, c, a, "r")
		reads, err := c.ReadRecords(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		stale := 0
		for _, rd := range reads {
			if rd.OK && rd.Record == "holder A" {
				stale++
			}
		}
		if stale > 0 {
			t.Errorf("%d of 5 nodes report holder A's record while the waiter holds the lock, want none", stale)
		}
	})
}

// Handle promises that "once the lock was released, expired or lost,
// Resume and Release of it return ErrNotHeld". The handle of a lock that
// Unlock passed on as it is holds the value the next holder holds now, so
// another process resumes it (a second holder of one value: R13 and R18
// gone) or releases the next holder's keys.
func TestKeepHandleOfUnlockedLock(t *testing.T) { // R5, R13, R18
	for _, tc := range []string{"resume", "release"} {
		t.Run(tc, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				c := memClient(t, nodes, redlock.WithHandoffKeep())
				other := memClient(t, nodes, redlock.WithHandoffKeep()) // another process
				ctx := t.Context()
				a, err := c.Lock(ctx, "r")
				if err != nil {
					t.Fatal(err)
				}
				w := handTo(t, c, a, "r")
				h := a.Handle() // of a released lock
				switch tc {
				case "resume":
					rl, err := other.Resume(ctx, h)
					if !errors.Is(err, redlock.ErrNotHeld) {
						t.Errorf("Resume of the handle of an unlocked lock: %v, want ErrNotHeld", err)
					}
					if err == nil {
						defer rl.Unlock(context.Background())
						if w.Validity() > 0 && rl.Validity() > 0 {
							t.Errorf("two holders at once: the waiter (value %v) and the resumed handle", w.Value() == rl.Value())
						}
					}
				case "release":
					err := other.Release(ctx, h)
					if !errors.Is(err, redlock.ErrNotHeld) {
						t.Errorf("Release of the handle of an unlocked lock: %v, want ErrNotHeld", err)
					}
					if n := memHolders(mems, defectKey("r"), w.Value()); n < 3 && w.Validity() > 0 {
						t.Errorf("the waiter's lock is on %d of 5 nodes while it believes it holds it", n)
					}
				}
			})
		})
	}
}

// An auto-extended holder's extender finds, while Unlock waits for it, that
// a quorum of nodes no longer holds the value (here three nodes restarted
// without persistence, R16.1). Unlock must not then pass the lock on as it
// is: the waiter would believe it holds keys that are gone, and another
// client could take them (R13). The hand-over must acquire anew, as it does
// for a lock whose loss was known before Unlock. Before the fix (doExtend
// records the loss it saw, and keep refuses such a lock) the waiter kept
// a's value, held by 2 of 5 nodes.
func TestKeepNotAfterExtensionFoundKeysGone(t *testing.T) { // R9, R13, R16, R17
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		for _, m := range mems {
			m.SetSlow(100 * time.Millisecond)
		}
		c := memClient(t, nodes, redlock.WithHandoffKeep(), redlock.WithTTL(10*time.Second))
		ctx := t.Context()
		start := time.Now()
		// Granted at 0.1s (answers take 0.1s); extended every 0.5s:
		// sent at 0.6s, answered 0.7s; sent at 1.2s, answered 1.3s.
		a, err := c.Lock(ctx, "r", redlock.WithAutoExtend(), redlock.WithExtendInterval(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan keepResult, 1)
		go func() {
			// It fails at 0.2s and waits for the hand-over: its timed
			// retry would find the forgotten nodes free and take them.
			l, err := c.Lock(ctx, "r", redlock.WithRetryDelay(5*time.Second, 5*time.Second))
			got <- keepResult{l, err}
		}()
		time.Sleep(time.Until(start.Add(time.Second)))
		for _, m := range mems[:3] {
			m.Forget() // a's keys are gone on a quorum
		}
		time.Sleep(time.Until(start.Add(1250 * time.Millisecond))) // the extension is on the wire
		_ = a.Unlock(context.Background())
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.l.Unlock(context.Background())
		if n := memHolders(mems, defectKey("r"), r.l.Value()); n < 3 {
			t.Errorf("the waiter's lock (validity %v) is on %d of 5 nodes, want a quorum", r.l.Validity(), n)
		}
	})
}

// cancelOnHand is an Observer that cancels a context when a lock is handed
// over: the waiter's context ends at the very moment of the hand-over.
type cancelOnHand struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (o *cancelOnHand) Attempt(e redlock.AttemptEvent) {
	if e.Handed {
		o.once.Do(o.cancel)
	}
}
func (o *cancelOnHand) Extension(redlock.ExtensionEvent) {}
func (o *cancelOnHand) End(redlock.EndEvent)             {}

// A waiter whose context ends at the moment Unlock keeps the lock for it
// (after handOver looked at the context, before the lock reaches the
// waiter) either returns the lock or leaves it to be handed on or
// released: no key outlives the calls (R11, R12). Run 20 times, as the
// waiter's select between its context and the hand-over is random; here
// the waiter, woken by its context first, always gave up, and the lock
// was dropped (handoff.go: leave, drop).
func TestKeepWaiterCancelledAtTheKeep(t *testing.T) { // R11, R12
	for i := range 20 {
		synctest.Test(t, func(t *testing.T) {
			nodes, mems := redlocktest.NewMemNodes(5)
			wctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			obs := &cancelOnHand{cancel: cancel}
			c := memClient(t, nodes, redlock.WithHandoffKeep(), redlock.WithObserver(obs))
			a, err := c.Lock(t.Context(), "r")
			if err != nil {
				t.Fatal(err)
			}
			got := keepWaiter(wctx, c, "r")
			if err := a.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err == nil {
				if r.l.Validity() <= 0 {
					t.Errorf("run %d: the waiter got a lock with no validity", i)
				}
				if err := r.l.Unlock(context.Background()); err != nil {
					t.Errorf("run %d: Unlock of the kept lock: %v", i, err)
				}
			} else if !errors.Is(r.err, context.Canceled) {
				t.Errorf("run %d: the waiter's Lock: %v, want the lock or context.Canceled", i, r.err)
			}
			synctest.Wait() // the dropped lock's Unlock, in the background
			if n := memKeyNodes(mems, defectKey("r")); n != 0 {
				t.Errorf("run %d (waiter err %v): the key is left on %d nodes", i, r.err, n)
			}
		})
	}
}

// Close refuses new acquisitions, and an Unlock after Close releases
// nothing and says so (ErrClosed), as a hand-over that acquires on the
// waiter's behalf does (its fan-out is refused). A kept hand-over asks no
// node, so it went on after Close began: Unlock reported success and a Lock
// call could return a lock granted by a closed client. Here Close waits for
// the waiter's second attempt, on the wire (slow nodes), when the holder
// unlocks. Before the fix (keep refuses on a closed client) Unlock returned
// nil.
func TestKeepNotAfterClose(t *testing.T) { // R12
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c, err := redlock.New(nodes, redlock.WithHandoffKeep())
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		a, err := c.Lock(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the requests still on their way after the quorum land first
		for _, m := range mems {
			m.SetSlow(200 * time.Millisecond)
		}
		// Attempts at 0-0.2s and 0.3-0.5s.
		got := make(chan keepResult, 1)
		go func() {
			l, err := c.Lock(ctx, "r", redlock.WithRetryDelay(100*time.Millisecond, 100*time.Millisecond))
			got <- keepResult{l, err}
		}()
		time.Sleep(400 * time.Millisecond)
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		synctest.Wait() // Close waits for the waiter's attempt
		if err := a.Unlock(context.Background()); !errors.Is(err, redlock.ErrClosed) {
			t.Errorf("Unlock after Close began: %v, want ErrClosed", err)
		}
		r := <-got
		if r.err == nil {
			t.Errorf("a Lock call returned a lock after Close began (Err %v)", r.l.Err())
		} else if !errors.Is(r.err, redlock.ErrClosed) {
			t.Errorf("the waiter's Lock: %v, want ErrClosed", r.err)
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
	})
}

// heldCount is an Observer that counts the locks granted (attempts,
// hand-overs, resumes) and not yet ended, as redlock/prometheus's
// held_locks gauge does, and the kept hand-overs.
type heldCount struct {
	mu         sync.Mutex
	held, kept int
	ends       int
}

func (o *heldCount) Attempt(e redlock.AttemptEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e.Outcome == redlock.AttemptAcquired || e.Handed || e.Resumed {
		o.held++
	}
	if e.Handed && e.Nodes == nil {
		o.kept++
	}
}
func (o *heldCount) Extension(redlock.ExtensionEvent) {}
func (o *heldCount) End(redlock.EndEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held--
	o.ends++
}

func (o *heldCount) counts() (held, kept int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.held, o.kept
}

// A Client.Do whose function panics gives the lock back on the way up; a
// waiter of the same client keeps it. The waiter then holds it on a quorum
// with validity left, the panicking call's extender is stopped (no
// extension after the panic), and the observers see every grant end once.
func TestKeepAfterDoPanics(t *testing.T) { // R12, R17
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		obs := &heldCount{}
		c := memClient(t, nodes, redlock.WithHandoffKeep(), redlock.WithTTL(3*time.Second), redlock.WithObserver(obs))
		ctx := t.Context()
		in, panicNow := make(chan struct{}), make(chan struct{})
		recovered := make(chan any, 1)
		go func() {
			defer func() { recovered <- recover() }()
			_ = c.Do(ctx, "r", func(context.Context) error {
				close(in)
				<-panicNow
				panic("boom")
			})
		}()
		<-in
		got := keepWaiter(ctx, c, "r", redlock.WithAutoExtend())
		close(panicNow)
		if p := <-recovered; p != "boom" {
			t.Fatalf("recovered %v, want the panic", p)
		}
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		if _, kept := obs.counts(); kept != 1 {
			t.Errorf("%d kept hand-overs, want 1", kept)
		}
		applied := memApplied(mems)
		time.Sleep(5 * time.Second) // the waiter's extender runs: ttl/3
		if err := r.l.Err(); err != nil {
			t.Fatalf("the kept lock ended: %v", err)
		}
		if n := memHolders(mems, defectKey("r"), r.l.Value()); n < 3 {
			t.Errorf("the kept lock is on %d of 5 nodes", n)
		}
		if extended := memApplied(mems) - applied; extended == 0 {
			t.Error("the kept lock's extender did not run")
		}
		if err := r.l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := memKeyNodes(mems, defectKey("r")); n != 0 {
			t.Errorf("the key is left on %d nodes", n)
		}
		if held, _ := obs.counts(); held != 0 {
			t.Errorf("the observers count %d locks held at the end, want 0", held)
		}
	})
}

// WithHandoffLimit counts kept hand-overs: at the limit the holder's Unlock
// releases the key on the nodes and announces it, so that another client's
// waiter may take it (R17), instead of passing it on again.
func TestKeepChainYieldsAtTheLimit(t *testing.T) { // R10, R17
	synctest.Test(t, func(t *testing.T) {
		const limit = 3
		nodes, mems := redlocktest.NewMemNodes(5)
		obs := &heldCount{}
		c := memClient(t, nodes, redlock.WithHandoffKeep(), redlock.WithHandoffLimit(limit), redlock.WithObserver(obs))
		ctx := t.Context()
		l, err := c.Lock(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		chain := []*redlock.Lock{l}
		for i := 1; i <= limit+1; i++ {
			got := keepWaiter(ctx, c, "r")
			if err := chain[i-1].Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil {
				t.Fatal(r.err)
			}
			chain = append(chain, r.l)
		}
		if _, kept := obs.counts(); kept != limit {
			t.Errorf("%d kept hand-overs, want %d (the limit)", kept, limit)
		}
		v := redlock.RawValue(chain[0])
		for i, l := range chain[1:] {
			if kept := redlock.RawValue(l) == v; kept != (i+1 <= limit) {
				t.Errorf("lock %d of the chain: kept %v, want %v", i+1, kept, i+1 <= limit)
			}
		}
		if err := chain[limit+1].Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := memKeyNodes(mems, defectKey("r")); n != 0 {
			t.Errorf("the key is left on %d nodes", n)
		}
		if held, _ := obs.counts(); held != 0 {
			t.Errorf("the observers count %d locks held at the end, want 0", held)
		}
	})
}

// WithMaxExtensions bounds the extensions of a chain of kept locks, the
// auto-extensions of the holder included: the waiter keeps a lock that
// reached its bound, and its extender does not extend it again; it runs out
// at Until with ErrExpired and ErrMaxExtensions (R17).
func TestKeepCountsAutoExtensions(t *testing.T) { // R17
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		obs := &heldCount{}
		c := memClient(t, nodes, redlock.WithHandoffKeep(), redlock.WithTTL(3*time.Second), redlock.WithObserver(obs))
		ctx := t.Context()
		opts := []redlock.LockOption{redlock.WithAutoExtend(), redlock.WithMaxExtensions(2)}
		a, err := c.Lock(ctx, "r", opts...)
		if err != nil {
			t.Fatal(err)
		}
		got := keepWaiter(ctx, c, "r", opts...)
		time.Sleep(2*time.Second + 10*time.Millisecond) // two extensions, at 1s and 2s
		if err := a.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		if _, kept := obs.counts(); kept != 1 {
			t.Fatalf("%d kept hand-overs, want 1", kept)
		}
		applied := memApplied(mems)
		until := r.l.Until()
		<-r.l.Done()
		if err := r.l.Err(); !errors.Is(err, redlock.ErrMaxExtensions) {
			t.Errorf("the kept lock ended with %v, want ErrMaxExtensions", err)
		}
		if now := time.Now(); now.After(until.Add(time.Millisecond)) {
			t.Errorf("the kept lock ended %v after its Until", now.Sub(until))
		}
		asked := memApplied(mems) - applied
		if asked != 0 {
			t.Errorf("the kept lock asked the nodes %d times past its chain's bound, want none", asked)
		}
		_ = r.l.Unlock(context.Background())
	})
}

// A *Lock printed with fmt or logged with log/slog shows no value: the
// value is the lock's secret (R4; whoever knows it extends and releases the
// lock, as with a Handle, whose String, GoString and LogValue leave it out),
// and a value that left the client unseen by Value would be kept by a
// hand-over for the next holder (R18). Before the fix (String, GoString,
// LogValue of *Lock) %v, %+v and %#v printed the struct's fields, value
// included, and slog logged it.
func TestLockPrintsNoValue(t *testing.T) { // R4, R18
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes, redlock.WithHandoffKeep())
		l, err := c.Lock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(context.Background())
		var logged strings.Builder
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("held", "lock", l)
		outs := map[string]string{"slog": logged.String()}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			outs[verb] = fmt.Sprintf(verb, l)
		}
		v := l.Value()
		for how, out := range outs {
			if strings.Contains(out, v) {
				t.Errorf("%s shows the value: %s", how, out)
			}
			if !strings.Contains(out, "r") {
				t.Errorf("%s does not name the resource: %s", how, out)
			}
		}
	})
}

// blockOnHand is an Observer whose Attempt of a hand-over waits for
// release: a slow observer (a log written to a slow pipe).
type blockOnHand struct {
	in      chan struct{}
	release chan struct{}
	once    sync.Once
}

func (o *blockOnHand) Attempt(e redlock.AttemptEvent) {
	if e.Handed {
		o.once.Do(func() { close(o.in) })
		<-o.release
	}
}
func (o *blockOnHand) Extension(redlock.ExtensionEvent) {}
func (o *blockOnHand) End(redlock.EndEvent)             {}

// The observers are called from the goroutine doing the work, never under
// a lock of the client's: a slow observer of one hand-over must not stall
// the Unlock of another resource. The kept hand-over called the observer
// with the hand-off's mutex held (handoff.go: keep, under handOver's
// h.mu), so every Lock and Unlock of the client that touches the hand-off
// waited for the observer. Real time (a goroutine blocked on a mutex stops
// synctest's clock): the Unlock of "other" gets 5 s, and takes
// microseconds. Before the fix (the event is sent once h.mu is unlocked)
// it waited for the observer.
func TestKeepObserverOutsideTheHandoffLock(t *testing.T) {
	nodes, _ := redlocktest.NewMemNodes(5)
	obs := &blockOnHand{in: make(chan struct{}), release: make(chan struct{})}
	c := memClient(t, nodes, redlock.WithHandoffKeep(), redlock.WithObserver(obs))
	ctx := t.Context()
	a, err := c.Lock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Lock(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan keepResult, 1)
	go func() {
		l, err := c.Lock(ctx, "r")
		got <- keepResult{l, err}
	}()
	// The waiter is queued once it failed an attempt: poll for it.
	deadline := time.Now().Add(5 * time.Second)
	for !redlock.Queued(c, "r") {
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not queue within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	go func() { _ = a.Unlock(context.Background()) }()
	<-obs.in // the hand-over of "r" is being reported
	unlocked := make(chan error, 1)
	go func() { unlocked <- b.Unlock(context.Background()) }()
	select {
	case err := <-unlocked:
		if err != nil {
			t.Errorf("Unlock of other: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the Unlock of another resource waits for an observer of a hand-over")
	}
	close(obs.release)
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	_ = r.l.Unlock(context.Background())
}
