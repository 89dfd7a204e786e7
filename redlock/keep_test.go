package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// With WithHandoffKeep, a lock handed over within one client is kept when
// it can be: the waiter continues it (same value, same Until) and Unlock
// asks no node, so that a hand-over within a process costs no round trip.
// Reading the value changes nothing. Any other lock, and every lock
// without the option (the default), is handed over by an acquisition on
// the waiter's behalf, which gives the waiter a value of its own,
// confirmed by a quorum.
func TestHandoffKeepsAnUnreadLock(t *testing.T) { // R9, R13, R17, R18
	const ttl = 5 * time.Second
	for _, tc := range []struct {
		name string
		opts []redlock.Option
		// before runs on the holder's lock before its Unlock.
		before func(*redlock.Lock)
		// hold is how long the holder holds the lock.
		hold time.Duration
		// waiter and holder are the Lock calls' options.
		waiter []redlock.LockOption
		holder []redlock.LockOption
		kept   bool
		// noKeep: the client's default, without WithHandoffKeep.
		noKeep bool
	}{
		{name: "default", noKeep: true},
		{name: "default, value read", noKeep: true, before: func(l *redlock.Lock) { _ = l.Value() }},
		{name: "unread", kept: true},
		{name: "unread, auto-extended", waiter: []redlock.LockOption{redlock.WithAutoExtend()}, kept: true},
		{name: "held a little", hold: ttl / 10, kept: true},
		{name: "held more than an eighth of its validity", hold: ttl / 7},
		{name: "value read", before: func(l *redlock.Lock) { _ = l.Value() }, kept: true},
		{name: "handle taken", before: func(l *redlock.Lock) { _ = l.Handle() }},
		{name: "caller's value", holder: []redlock.LockOption{redlock.WithValue("a-value-of-the-caller-000")}},
		{name: "waiter's ttl differs", waiter: []redlock.LockOption{redlock.WithTTL(2 * ttl)}},
		{name: "waiter's drift differs", waiter: []redlock.LockOption{redlock.WithDriftFactor(0.02)}},
		{name: "fencing", opts: []redlock.Option{redlock.WithFencing()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				for _, m := range mems {
					m.SetSlow(time.Millisecond)
				}
				// No timed retry of the waiter's: its releases (R8.5)
				// could land while the nodes' requests are counted.
				opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithRetryDelay(time.Hour, time.Hour)}
				if !tc.noKeep {
					opts = append(opts, redlock.WithHandoffKeep())
				}
				c := memClient(t, nodes, append(opts, tc.opts...)...)
				l, err := c.Lock(t.Context(), "r", tc.holder...)
				if err != nil {
					t.Fatal(err)
				}
				type result struct {
					l   *redlock.Lock
					err error
				}
				got := make(chan result, 1)
				go func() {
					wl, err := c.Lock(t.Context(), "r", tc.waiter...)
					got <- result{wl, err}
				}()
				time.Sleep(10 * time.Millisecond) // fake time: the waiter failed and is queued
				if tc.hold > 0 {
					time.Sleep(tc.hold)
				}
				if tc.before != nil {
					tc.before(l)
				}
				until := l.Until()
				applied := memApplied(mems)
				if err := l.Unlock(context.Background()); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
				r := <-got
				if r.err != nil {
					t.Fatalf("the waiter's Lock: %v", r.err)
				}
				defer r.l.Unlock(context.Background())
				asked := memApplied(mems) - applied
				v := r.l.Value()
				if tc.kept {
					if v != redlock.RawValue(l) || !r.l.Until().Equal(until) {
						t.Errorf("not kept: value changed %v, Until %v -> %v", v != redlock.RawValue(l), until, r.l.Until())
					}
					if l.Value() != "" || l.Handle().Value != "" {
						t.Errorf("the lock that was kept still shows its value after Unlock")
					}
					if asked != 0 {
						t.Errorf("a kept lock asked the nodes %d times, want none", asked)
					}
				} else {
					if v == redlock.RawValue(l) {
						t.Errorf("the waiter holds the holder's value, want one of its own")
					}
					if asked == 0 {
						t.Errorf("no node was asked, want an acquisition on the waiter's behalf")
					}
				}
				if n := memHolders(mems, defectKey("r"), v); n < 3 {
					t.Errorf("the waiter's value is on %d of 5 nodes, want a quorum", n)
				}
				if d := r.l.Validity(); d <= 0 {
					t.Errorf("the waiter's validity is %v", d)
				}
			})
		})
	}
}

// memApplied counts the requests the MemNodes have applied.
func memApplied(mems []*redlocktest.MemNode) int64 {
	var n int64
	for _, m := range mems {
		n += m.Applied()
	}
	return n
}

// The value of a kept lock is shared along the chain of holders that kept
// it (reading it changes nothing); the chain counts extensions (R17) as a
// chain of hand-overs does, and ends at the hand-off limit.
func TestHandoffKeptChain(t *testing.T) { // R17, R18
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes, redlock.WithHandoffKeep(), redlock.WithHandoffLimit(3))
		ctx := t.Context()
		first, err := c.Lock(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Extend(ctx); err != nil {
			t.Fatal(err)
		}
		// hand queues one waiter, unlocks l and returns the waiter's lock.
		hand := func(l *redlock.Lock) *redlock.Lock {
			t.Helper()
			got := make(chan *redlock.Lock, 1)
			go func() {
				wl, err := c.Lock(ctx, "r", redlock.WithMaxExtensions(1))
				if err != nil {
					t.Error(err)
				}
				got <- wl
			}()
			time.Sleep(10 * time.Millisecond) // fake time: the waiter is queued
			if err := l.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
			return <-got
		}
		second := hand(first)
		if err := second.Extend(ctx); err == nil {
			t.Error("the kept lock's Extend succeeded past WithMaxExtensions(1) counted along the chain")
		}
		third := hand(second)
		v := redlock.RawValue(first)
		if first.Value() != "" || second.Value() != "" {
			t.Error("an earlier holder of the chain still shows the value the next holder holds")
		}
		if redlock.RawValue(third) != v {
			t.Fatal("the second hand-over did not keep the lock")
		}
		if third.Value() != v { // a getter: changes nothing
			t.Fatal("the holder's Value is not its value")
		}
		fourth := hand(third)
		if redlock.RawValue(fourth) != v {
			t.Error("reading the value stopped the chain of kept locks")
		}
		fifth := hand(fourth) // the limit (3): announced, acquired anew
		if redlock.RawValue(fifth) == v {
			t.Error("the chain was kept past the hand-off limit")
		}
		_ = fifth.Unlock(context.Background())
	})
}
