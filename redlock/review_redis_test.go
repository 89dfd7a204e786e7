package redlock_test

import (
	"errors"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Where handles meet read locks and sets, over real servers: a handle
// whose key is now held in the other mode (readers' hash where a plain
// lock was, a writer's string where readers were) is not held (ErrNotHeld,
// not a node error), changes nothing, and a resumed read lock or set is
// extended and released by the other adapter.
func TestReviewHandleModesRedis(t *testing.T) {
	as := adapters()
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		other := as[0]
		if other.name == a.name {
			other = as[1]
		}
		cl := redlocktest.Start(t, 3)
		first := dial(t, a, cl, redlock.WithTTL(700*time.Millisecond))
		second := dial(t, other, cl, redlock.WithTTL(time.Minute))

		// A plain lock that expired; readers now hold its key.
		l, err := first.Lock(t.Context(), "p", redlock.WithTries(10)) // tries: a loaded machine may take longer than the 700 ms ttl
		if err != nil {
			t.Fatal(err)
		}
		redlocktest.Eventually(t, 10*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 }, "the plain lock's keys expire")
		r, err := second.TryRLock(t.Context(), "p")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := second.Resume(t.Context(), l.Handle()); !errors.Is(err, redlock.ErrNotHeld) || errors.Is(err, redlock.ErrExtendFailed) {
			t.Errorf("Resume of a plain lock's handle, readers on its key: err = %v, want ErrNotHeld only", err)
		}
		if err := second.Release(t.Context(), l.Handle()); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Release of a plain lock's handle, readers on its key: err = %v, want ErrNotHeld", err)
		}

		// The read lock resumed by the first client's adapter, extended
		// and released by it; a writer then gets in.
		rr, err := first.Resume(t.Context(), r.Handle())
		if err != nil {
			t.Fatalf("Resume of a read lock: %v", err)
		}
		if !rr.Shared() {
			t.Error("resumed read lock: Shared() = false")
		}
		if _, err := second.TryWLock(t.Context(), "p"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("TryWLock while the resumed reader holds: err = %v, want ErrNotAcquired", err)
		}
		if err := rr.Unlock(t.Context()); err != nil {
			t.Fatalf("Unlock of the resumed read lock: %v", err)
		}
		w, err := second.TryWLock(t.Context(), "p")
		if err != nil {
			t.Fatalf("TryWLock after the resumed reader left: %v", err)
		}
		// The reader's handle, now that a writer holds the key.
		if _, err := first.Resume(t.Context(), r.Handle()); !errors.Is(err, redlock.ErrNotHeld) || errors.Is(err, redlock.ErrExtendFailed) {
			t.Errorf("Resume of a read lock's handle, a writer on its key: err = %v, want ErrNotHeld only", err)
		}
		if err := w.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}

		// A set resumed and released by handle.
		s, err := second.TryLockAll(t.Context(), []string{"s1", "s2"})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := first.Resume(t.Context(), s.Handle())
		if err != nil {
			t.Fatalf("Resume of a set: %v", err)
		}
		if err := rs.Extend(t.Context()); err != nil {
			t.Fatalf("Extend of the resumed set: %v", err)
		}
		if err := second.Release(t.Context(), rs.Handle()); err != nil {
			t.Fatalf("Release of the set by handle: %v", err)
		}
		redlocktest.Eventually(t, 5*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 }, "every key released")
	})
}
