package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// Every call that relies on the nodes checks the max ttl they advertise,
// not only an acquisition: Resume with a longer ttl than a node keeps
// (dlm extend --ttl), and Extend once a node restarted with a smaller max
// ttl than the lock's. Both are refused with ErrInvalid before any
// request when the nodes left cannot make a quorum; the lock stays held
// until its Until. One such node of three is counted as failed instead:
// the extension is made on the other two, without a request to it.
func TestResumeAndExtendCheckAdvertisedMaxTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		for _, m := range mems {
			m.SetFacts(adapter.Facts{MaxTTL: 10 * time.Second})
		}
		c, err := redlock.New(nodes, redlock.WithTTL(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		l, err := c.TryLock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		h := l.Handle()
		if _, err := c.Resume(t.Context(), h, redlock.WithTTL(90*time.Second)); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "max ttl 10s") {
			t.Errorf("Resume with ttl 90s on nodes advertising 10s: %v, want %v naming the max ttl", err, redlock.ErrInvalid)
		}
		if _, err := c.Resume(t.Context(), h, redlock.WithTTL(8*time.Second)); err != nil {
			t.Errorf("Resume with ttl 8s on nodes advertising 10s: %v", err)
		}
		mems[1].SetFacts(adapter.Facts{MaxTTL: 2 * time.Second}) // restarted with --max-ttl 2s
		time.Sleep(time.Second)
		keys, _ := mems[1].Keys(t.Context(), redlock.DefaultKeyPrefix)
		if len(keys) != 1 {
			t.Fatalf("node 2 holds lock keys %q, want the lock's", keys)
		}
		before, _, _ := mems[1].TTL(t.Context(), keys[0])
		if err := l.Extend(t.Context()); err != nil {
			t.Errorf("Extend of a 5s lock with one node of 3 now advertising 2s: %v, want it extended on the other two", err)
		}
		for i, want := range []time.Duration{5 * time.Second, before, 5 * time.Second} {
			if got, _, _ := mems[i].TTL(t.Context(), keys[0]); got != want {
				t.Errorf("node %d: the lock key's ttl after the Extend = %v, want %v (node 2, counted as failed, not extended)", i+1, got, want)
			}
		}
		mems[2].SetFacts(adapter.Facts{MaxTTL: 3 * time.Second})
		applied := mems[0].Applied()
		if err := l.Extend(t.Context()); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "nodes m2 (2s), m3 (3s) advertise") {
			t.Errorf("Extend of a 5s lock on two nodes of 3 now advertising 2s and 3s: %v, want %v naming the max ttl", err, redlock.ErrInvalid)
		}
		if got := mems[0].Applied(); got != applied {
			t.Errorf("the refused Extend sent %d requests", got-applied)
		}
	})
}
