package redlock_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Resume bounds a lock's extensions by the count the nodes keep, not the
// handle's, which its holder can edit (bounds.go). When too few nodes
// answer the read of that count, the handle's count cannot be trusted:
// Resume refuses, whatever its confirming extension would do. Here every
// node answers 6 s late: later than the read waits (a grant's patience of
// the client's ttl, 10 s: 4.9 s), within what the extension of the
// handle's lock (ttl a minute) waits for nodes the client knows are slow.
// In memory, under synctest.
//
// Failed before (an unread count left the handle's to be trusted):
// "Resume of the edited handle of a lock at its bound (2 of 2 extensions)
// = <nil>, want an error".
func TestResumeRefusesWhenTheExtensionCountIsUnread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl, late = 10 * time.Second, 6 * time.Second
		nodes, mems := redlocktest.NewMemNodes(3)
		holder, err := redlock.New(nodes, redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		// A lock of a minute: it outlives the resumer's warm-up.
		l, err := holder.Lock(t.Context(), "r", redlock.WithMaxExtensions(2), redlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Handle() // crossed: its extensions are counted on the nodes
		for range 2 {
			if err := l.Extend(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		h := l.Handle()
		h.Extensions = 0 // edited by its holder
		resumer, err := redlock.New(nodes, redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer resumer.Close()
		w, err := resumer.Lock(t.Context(), "warm")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the requests still on their way after the quorum land first
		for _, m := range mems {
			m.SetSlow(late)
		}
		// The resumer learns that the nodes are slow: its extension
		// waits for them from its second try on.
		learn(t, w)
		rl, err := resumer.Resume(t.Context(), h, redlock.WithMaxExtensions(100))
		if err == nil {
			t.Errorf("nodes %v late (ttl %v): Resume of the edited handle of a lock at its bound (2 of 2 extensions) = <nil>, want an error", late, ttl)
			_ = rl.Unlock(t.Context())
			return
		}
		if !errors.Is(err, redlock.ErrExtendFailed) && !errors.Is(err, redlock.ErrMaxExtensions) {
			t.Errorf("Resume = %v, want ErrExtendFailed (the count unread) or ErrMaxExtensions", err)
		}
	})
}
