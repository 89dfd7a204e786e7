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

// A handle carries no authority the client does not
// grant. Before the fix, Resume of a handle whose ttl was edited to
// 2000000h extended the key by as much (228 years), and a handle whose
// extension count was reset to 0 was resumed past WithMaxExtensions
// without end.

func TestResumeKeepsTheClientsTTLBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		c := memClient(t, nodes)
		l, err := c.Lock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		h := l.Handle()
		h.TTL = 2000000 * time.Hour
		r, err := c.Resume(t.Context(), h)
		if !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Resume of a handle with ttl %v: %v; want ErrInvalid", h.TTL, err)
		}
		if r != nil {
			_ = r.Unlock(context.Background())
		}
		for _, m := range mems {
			if d, ok, _ := m.TTL(context.Background(), defectKey("r")); ok && d > redlock.DefaultMaxTTL {
				t.Errorf("%s: the key lives %v, past the bound %v", m, d, redlock.DefaultMaxTTL)
			}
		}
		if _, err := c.Resume(t.Context(), l.Handle(), redlock.WithTTL(25*time.Hour)); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Resume WithTTL(25h): %v; want ErrInvalid", err)
		}
		if _, err := c.Lock(t.Context(), "s", redlock.WithTTL(25*time.Hour)); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Lock WithTTL(25h): %v; want ErrInvalid", err)
		}
		wide := memClient(t, nodes, redlock.WithMaxTTL(48*time.Hour))
		l2, err := wide.Lock(t.Context(), "s", redlock.WithTTL(25*time.Hour))
		if err != nil {
			t.Fatalf("Lock WithTTL(25h) under WithMaxTTL(48h): %v", err)
		}
		_ = l2.Unlock(t.Context())
		if _, err := redlock.New(nodes, redlock.WithTTL(25*time.Hour)); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("New WithTTL(25h): %v; want ErrInvalid", err)
		}
	})
}

// The extension count of a lock that crossed processes is kept on the
// nodes: a handle whose count was reset (or any edited count) is resumed
// no further than the bound.
func TestResumeCountsExtensionsOnTheNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(3)
		acq := memClient(t, nodes)
		l, err := acq.Lock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		h := l.Handle()
		const bound = 3
		resumes := 0
		for range 10 {
			other := memClient(t, nodes) // another process each time
			h.Extensions = 0             // the holder resets the count
			r, err := other.Resume(t.Context(), h, redlock.WithMaxExtensions(bound))
			if err != nil {
				if !errors.Is(err, redlock.ErrMaxExtensions) {
					t.Fatalf("resume %d: %v; want ErrMaxExtensions at the bound", resumes+1, err)
				}
				break
			}
			resumes++
			h = r.Handle()
		}
		if resumes > bound {
			t.Errorf("a handle whose count was reset each time was resumed %d times; the bound is %d", resumes, bound)
		}
		// Extensions in a process after its handle was written count too.
		l2, err := acq.Lock(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		h2 := l2.Handle()
		for range 2 {
			if err := l2.Extend(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		other := memClient(t, nodes)
		r, err := other.Resume(t.Context(), h2, redlock.WithMaxExtensions(bound))
		if err != nil {
			t.Fatalf("first resume (2 extensions done, bound %d): %v", bound, err)
		}
		if err := r.Extend(t.Context()); !errors.Is(err, redlock.ErrMaxExtensions) {
			t.Errorf("extension 4 (the handle said 0, the nodes 2, the resume made 3): %v; want ErrMaxExtensions", err)
		}
		// A larger bound at the next resumption does not raise it.
		h3 := r.Handle()
		h3.Extensions = 0
		if _, err := memClient(t, nodes).Resume(t.Context(), h3, redlock.WithMaxExtensions(1000)); !errors.Is(err, redlock.ErrMaxExtensions) {
			t.Errorf("resume with WithMaxExtensions(1000) of a lock resumed with bound %d and extended 3 times: %v; want ErrMaxExtensions", bound, err)
		}
	})
}
