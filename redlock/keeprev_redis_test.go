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
		// goredis's nodes are no adapter.HandoffNode: its clients hand
		// nothing over, and a waiter takes the lock by its own retry.
		handoff := a.name != "goredis"
		obs := &attempts{}
		cl, c := cluster(t, a, 3, redlock.WithTTL(time.Minute), redlock.WithObserver(obs), redlock.WithRetryDelay(10*time.Millisecond, 20*time.Millisecond))
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
			n := obs.count()
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				if handoff {
					return redlock.Queued(c, resource)
				}
				return obs.count() > n
			}, "the waiter fails an attempt and waits")
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
		before := cl.MustValues(defectKey("unread"))
		w := hand(l, "unread")
		after := cl.MustValues(defectKey("unread"))
		if kept := slices.Equal(before, after) && after[0] == w.Value(); kept != handoff {
			t.Errorf("an unread lock: kept %v, want %v (hand-off): nodes held %q, then %q", kept, handoff, before, after)
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
