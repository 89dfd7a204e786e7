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

// Defects found by the review of issue 15's primitives where they meet
// (read-write locks, sets, handles, election) and Close.

// A writer waiting behind readers when its client is closed removes its
// waiting marks, as WLock's documentation promises for every end of the
// call: the marks must not keep other clients' readers out for a ttl.
// Failed on 314a9ee: the marks stayed on all 5 nodes after Close (the
// closed client sent no WUnwait).
func TestReviewWLockCloseRemovesMarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		readers := memClient(t, nodes, redlock.WithTTL(10*time.Second))
		writers, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer writers.Close()
		r, err := readers.TryRLock(t.Context(), "m")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := writers.WLock(context.Background(), "m")
			done <- err
		}()
		synctest.Wait() // the writer's first attempt left its marks; it waits to retry
		key := redlock.DefaultKeyPrefix + "m"
		marked := 0
		for _, m := range mems {
			if _, w := m.Readers(key); len(w) > 0 {
				marked++
			}
		}
		if marked == 0 {
			t.Fatal("the waiting writer left no mark: the test sees nothing")
		}
		if err := writers.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, redlock.ErrClosed) {
			t.Fatalf("WLock when its client closed: err = %v, want ErrClosed", err)
		}
		for _, m := range mems {
			if _, w := m.Readers(key); len(w) > 0 {
				t.Errorf("%s: waiting marks %v left after Close ended WLock", m, w)
			}
		}
		r2, err := readers.TryRLock(t.Context(), "m")
		if err != nil {
			t.Fatalf("TryRLock of another client after the writer's client closed: %v", err)
		}
		_ = r2.Unlock(t.Context())
		_ = r.Unlock(t.Context())
	})
}
