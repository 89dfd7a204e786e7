package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu         sync.Mutex
	attempts   []redlock.AttemptEvent
	extensions []redlock.ExtensionEvent
	ends       []redlock.EndEvent
}

func (r *recorder) Attempt(e redlock.AttemptEvent) {
	r.mu.Lock()
	r.attempts = append(r.attempts, e)
	r.mu.Unlock()
}

func (r *recorder) Extension(e redlock.ExtensionEvent) {
	r.mu.Lock()
	r.extensions = append(r.extensions, e)
	r.mu.Unlock()
}

func (r *recorder) End(e redlock.EndEvent) {
	r.mu.Lock()
	r.ends = append(r.ends, e)
	r.mu.Unlock()
}

// autoExtensions counts the successful automatic extensions.
func (r *recorder) autoExtensions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.extensions {
		if e.Auto && e.Err == nil {
			n++
		}
	}
	return n
}

// deleteOn deletes key on the first k servers, as an operator, a crash
// without persistence, or a clock jump would.
func deleteOn(t *testing.T, cl *redlocktest.Cluster, key string, k int) {
	t.Helper()
	for _, s := range cl.Servers[:k] {
		if err := s.Client().Del(t.Context(), key).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// waitDone waits for l.Done, failing the test after timeout.
func waitDone(t *testing.T, l *redlock.Lock, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-l.Done():
		return time.Since(start)
	case <-time.After(timeout):
		t.Fatalf("Done not closed within %v (Err = %v)", timeout, l.Err())
	}
	return 0
}

func TestAutoExtendKeepsTheLock(t *testing.T) { // R17
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		// A 2s ttl, held 4 ttls: a loaded machine that stalls the
		// extender for more than about two thirds of the ttl loses the
		// lock, as it should; with an 800ms ttl (held 10 ttls) that was a
		// stall of half a second.
		const ttl, ttls = 2 * time.Second, 4
		cl := redlocktest.Start(t, 5)
		rec := &recorder{}
		c := dial(t, a, cl, redlock.WithTTL(ttl), redlock.WithNodeTimeout(250*time.Millisecond), redlock.WithObserver(rec))
		other := dial(t, a, cl, redlock.WithTTL(ttl), redlock.WithNodeTimeout(250*time.Millisecond))
		l, err := c.Lock(t.Context(), "r", redlock.WithAutoExtend(), redlock.WithTries(10))
		if err != nil {
			t.Fatal(err)
		}
		// Hold it for a few ttls; meanwhile nobody else gets it.
		hold := time.NewTimer(ttls * ttl)
		defer hold.Stop()
		tick := time.NewTicker(ttl / 4)
		defer tick.Stop()
		tries := 0
		for held := true; held; {
			select {
			case <-l.Done():
				t.Fatalf("lock lost after %d extensions: %v", rec.autoExtensions(), l.Err())
			case <-hold.C:
				held = false
			case <-tick.C:
				tries++
				if l2, err := other.TryLock(t.Context(), "r"); err == nil {
					_ = l2.Unlock(t.Context())
					t.Fatal("another client acquired an auto-extended lock")
				}
			}
		}
		if err := l.Err(); err != nil {
			t.Fatalf("Err after %d ttls = %v, want nil", ttls, err)
		}
		if n := rec.autoExtensions(); n < ttls {
			t.Errorf("%d automatic extensions in %d ttls, want about %d", n, ttls, 3*ttls)
		}
		if err := l.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitDone(t, l, time.Second)
		if err := l.Err(); !errors.Is(err, redlock.ErrUnlocked) {
			t.Errorf("Err after Unlock = %v, want ErrUnlocked", err)
		}
		t.Logf("held for %v with %d extensions; %d foreign attempts refused", ttls*ttl, rec.autoExtensions(), tries)
	})
}

func TestLossClosesDone(t *testing.T) { // R17
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		const ttl = 3 * time.Second // extension every second: a loaded machine's stall of under 2s is not a loss
		cl := redlocktest.Start(t, 5)
		rec := &recorder{}
		c := dial(t, a, cl, redlock.WithTTL(ttl), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithObserver(rec))
		l, err := c.Lock(t.Context(), "r", redlock.WithAutoExtend(), redlock.WithTries(10))
		if err != nil {
			t.Fatal(err)
		}
		redlocktest.Eventually(t, 10*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 5 }, "keys not set on every node")
		deleteOn(t, cl, redlock.DefaultKeyPrefix+"r", 3)
		took := waitDone(t, l, 10*time.Second)
		// ErrLost, not ErrExpired: the next extension noticed, before the
		// validity ran out.
		if err := l.Err(); !errors.Is(err, redlock.ErrLost) || !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("Err = %v, want ErrLost (and ErrNotHeld)", err)
		}
		if took >= ttl {
			t.Errorf("Done closed %v after the loss; the extension every ttl/3 should notice within about %v", took, ttl/3)
		}
		t.Logf("loss noticed after %v (extension interval %v)", took, ttl/3)
		if err := l.Unlock(t.Context()); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Unlock after the loss = %v, want ErrNotHeld", err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.ends) != 1 || !errors.Is(rec.ends[0].Reason, redlock.ErrLost) {
			t.Errorf("End events = %+v, want one, with ErrLost", rec.ends)
		}
	})
}

func TestDoCancelsOnLoss(t *testing.T) { // R17
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		// A ttl of 6 s extended every 100 ms: the loss is found at the
		// next extension, and a test process not run for seconds does
		// not let the lock expire first (ErrExpired, not ErrLost).
		const ttl = 6 * time.Second
		cl := redlocktest.Start(t, 5)
		c := dial(t, a, cl, redlock.WithTTL(ttl), redlock.WithNodeTimeout(200*time.Millisecond))
		var cause error
		err := c.Do(t.Context(), "r", func(ctx context.Context) error {
			redlocktest.Eventually(t, 10*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 5 }, "keys not set on every node")
			deleteOn(t, cl, redlock.DefaultKeyPrefix+"r", 3)
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return ctx.Err()
			case <-time.After(10 * time.Second):
				return errors.New("fn's context not cancelled within 10s of the loss")
			}
		}, redlock.WithExtendInterval(100*time.Millisecond))
		if !errors.Is(err, redlock.ErrLost) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Do = %v, want fn's context.Canceled joined with ErrLost", err)
		}
		if !errors.Is(cause, redlock.ErrLost) {
			t.Errorf("context.Cause in fn = %v, want ErrLost", cause)
		}
	})
}

func TestDo(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl, c := cluster(t, a, 5, redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithTTL(time.Second))
		ran := false
		err := c.Do(t.Context(), "r", func(ctx context.Context) error {
			ran = true
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		})
		if err != nil || !ran {
			t.Fatalf("Do = %v (ran %v), want nil", err, ran)
		}
		redlocktest.Eventually(t, 5*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 }, "Do left keys behind")
		boom := errors.New("boom")
		if err := c.Do(t.Context(), "r", func(context.Context) error { return boom }); !errors.Is(err, boom) || errors.Is(err, redlock.ErrLost) {
			t.Errorf("Do with a failing fn = %v, want just fn's error", err)
		}
		if err := c.Do(t.Context(), "r", nil); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Do(nil) = %v, want ErrInvalid", err)
		}
	})
}

func TestExtensionBound(t *testing.T) { // R17, R1.2
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 5)
		rec := &recorder{}
		// A 3s ttl extended every 100 ms: each extension has nearly the
		// whole ttl to land, so that a loaded machine that stalls the
		// extender for a second or two does not end the lock before its
		// third extension (with 1s at the default interval, a stall of
		// over half a second did).
		c := dial(t, a, cl, redlock.WithTTL(3*time.Second), redlock.WithNodeTimeout(300*time.Millisecond), redlock.WithObserver(rec))
		l, err := c.Lock(t.Context(), "auto", redlock.WithAutoExtend(), redlock.WithExtendInterval(100*time.Millisecond), redlock.WithMaxExtensions(3), redlock.WithTries(10))
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, l, 10*time.Second)
		if err := l.Err(); !errors.Is(err, redlock.ErrExpired) || !errors.Is(err, redlock.ErrMaxExtensions) {
			t.Fatalf("Err = %v, want ErrExpired and ErrMaxExtensions", err)
		}
		if n := rec.autoExtensions(); n != 3 {
			t.Errorf("%d automatic extensions, want the bound, 3", n)
		}
		// The bound applies to manual extensions too.
		m, err := c.Lock(t.Context(), "manual", redlock.WithMaxExtensions(2), redlock.WithTTL(5*time.Second), redlock.WithTries(10))
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []error{nil, nil, redlock.ErrMaxExtensions} {
			err := m.Extend(t.Context())
			// ErrExtendFailed is what Extend promises when no quorum
			// answered within the node bound (a tenth of the ttl here):
			// a loaded machine that stalls the client longer than that
			// times out every node. The lock is still held until its
			// Until and the failure counts no extension, so it is tried
			// again while the lock holds; what is under test is the
			// count of the extensions that succeeded.
			for errors.Is(err, redlock.ErrExtendFailed) && time.Now().Before(m.Until()) {
				t.Logf("Extend %d failed, tried again: %v", i+1, err)
				err = m.Extend(t.Context())
			}
			if !errors.Is(err, want) || (want == nil && err != nil) {
				t.Fatalf("Extend %d = %v, want %v", i+1, err, want)
			}
		}
		_ = m.Unlock(t.Context())
	})
}

func TestDoneWithoutAutoExtend(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		_, c := cluster(t, a, 5, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(300*time.Millisecond))
		l, err := c.Lock(t.Context(), "r", redlock.WithTries(10))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Err(); err != nil {
			t.Fatalf("Err of a fresh lock = %v", err)
		}
		waitDone(t, l, 5*time.Second)
		if err := l.Err(); !errors.Is(err, redlock.ErrExpired) {
			t.Fatalf("Err at Until = %v, want ErrExpired", err)
		}
		if time.Now().Before(l.Until()) {
			t.Fatalf("Done closed before Until")
		}
	})
}

func TestCloseStopsAutoExtension(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 5)
		c := dial(t, a, cl, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(200*time.Millisecond))
		l, err := c.Lock(t.Context(), "r", redlock.WithAutoExtend(), redlock.WithTries(10))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		waitDone(t, l, 10*time.Second) // at once; the bound is for a loaded machine
		if err := l.Err(); !errors.Is(err, redlock.ErrClosed) {
			t.Fatalf("Err after Close = %v, want ErrClosed", err)
		}
	})
}
