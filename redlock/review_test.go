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

// PutRecord publishes the record of the holder of one lock key; a lock on
// a set (LockAll) has no one key and a read lock (RLock) does not hold the
// key by its value. Both must be refused as bad input (ErrInvalid), not
// reported as locks no longer held while they are. Failed on 314a9ee:
// PutRecord of a held set and of a held read lock returned ErrNotHeld
// (the set's request went to the empty key "").
func TestReviewPutRecordOfSetOrReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(3)
		c := memClient(t, nodes, redlock.WithTTL(10*time.Second))
		set, err := c.LockAll(t.Context(), []string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.RLock(t.Context(), "c")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			l    *redlock.Lock
		}{{"set", set}, {"read lock", r}} {
			err := tc.l.PutRecord(t.Context(), "1 me")
			if !errors.Is(err, redlock.ErrInvalid) || errors.Is(err, redlock.ErrNotHeld) {
				t.Errorf("PutRecord of a held %s: err = %v, want ErrInvalid (and not ErrNotHeld)", tc.name, err)
			}
			if err := tc.l.Extend(t.Context()); err != nil {
				t.Errorf("Extend of the %s after PutRecord: %v", tc.name, err)
			}
			if err := tc.l.Unlock(t.Context()); err != nil {
				t.Errorf("Unlock of the %s: %v", tc.name, err)
			}
		}
	})
}
