package redlock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// The kept hand-over over real servers and each adapter: a lock whose
// value nobody read is passed on as it is (the nodes hold the same value
// before and after, and the waiter's Value is it), and a lock that
// published a record is not: the waiter gets a value of its own, so that
// no node reports the first holder's record for the waiter's lock
// (TestKeepPublishedRecordIsNotPassedOn on MemNodes).
func TestKeepRedis(t *testing.T) { // R4, R9, R18
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl, c := cluster(t, a, 3, redlock.WithTTL(time.Minute), redlock.WithHandoffKeep())
		ctx := t.Context()
		// hand unlocks l once a Lock call of c waits for resource, and
		// returns the waiter's lock.
		hand := func(l *redlock.Lock, resource string) *redlock.Lock {
			t.Helper()
			got := make(chan keepResult, 1)
			go func() {
				wl, err := c.Lock(ctx, resource)
				got <- keepResult{wl, err}
			}()
			redlocktest.Eventually(t, 10*time.Second, func() bool { return redlock.Queued(c, resource) }, "the waiter queues")
			if err := l.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil {
				t.Fatal(r.err)
			}
			t.Cleanup(func() { _ = r.l.Unlock(context.Background()) })
			return r.l
		}

		l, err := c.Lock(ctx, "unread")
		if err != nil {
			t.Fatal(err)
		}
		// Lock returns at a quorum: wait for the last node's SET.
		var before []string
		redlocktest.Eventually(t, 10*time.Second, func() bool {
			before = cl.MustValues(defectKey("unread"))
			return !slices.Contains(before, "")
		}, "the lock's key reached every node")
		w := hand(l, "unread")
		after := cl.MustValues(defectKey("unread"))
		if !slices.Equal(before, after) || after[0] != w.Value() {
			t.Errorf("an unread lock was not kept: nodes held %q, then %q; the waiter's value is on them: %v", before, after, after[0] == w.Value())
		}

		l, err = c.Lock(ctx, "published")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.PutRecord(ctx, "first holder"); err != nil {
			t.Fatal(err)
		}
		hand(l, "published")
		reads, err := c.ReadRecords(ctx, "published")
		if err != nil {
			t.Fatal(err)
		}
		for _, rd := range reads {
			if rd.OK && rd.Record == "first holder" {
				t.Errorf("%s reports the first holder's record for the waiter's lock", rd.Node)
			}
		}
	})
}
