package redlock_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// A node that restarts drops its subscribers. A client that waits for a
// key's release listens on HandoffWatchNodes nodes, chosen once while the
// key has waiters (Watch is not called again while its queue never
// empties): each adapter must subscribe again once the node is back, or
// the client hears no release from it for as long as the key stays busy.
func TestHandoffSubscribesAgainAfterARestart(t *testing.T) { // R10, R14
	redlocktest.Require(t)
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 5)
		holder := dial(t, a, cl, redlock.WithTTL(time.Minute))
		waiter := dial(t, a, cl, redlock.WithTTL(time.Minute), redlock.WithRetryDelay(time.Minute, time.Minute))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		const key = "restart"
		channel := rueidis.ChannelPrefix + "dlm:lock:" + key
		l, err := holder.TryLock(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			l2, err := waiter.Lock(ctx, key)
			if err == nil {
				err = l2.Unlock(context.WithoutCancel(ctx))
			}
			got <- err
		}()
		numsub := func(s *redlocktest.Server) int64 {
			m, err := s.Client().PubSubNumSub(ctx, channel).Result()
			if err != nil {
				return -1
			}
			return m[channel]
		}
		var watched []*redlocktest.Server
		redlocktest.Eventually(t, 10*time.Second, func() bool {
			watched = watched[:0]
			for _, s := range cl.Servers {
				if numsub(s) > 0 {
					watched = append(watched, s)
				}
			}
			return len(watched) == redlock.HandoffWatchNodes
		}, "the waiter never listened on %d nodes", redlock.HandoffWatchNodes)
		for _, s := range watched {
			s.Restart(0)
		}
		deadline := time.Now().Add(10 * time.Second)
		for _, s := range watched {
			for numsub(s) < 1 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond) // polling the node, bounded by deadline
			}
			if n := numsub(s); n < 1 {
				t.Errorf("%s: %d subscribers of %s 10 s after the restart, want 1 (the waiter hears no release from it)", s.Addr(), n, channel)
			}
		}
		// The restarted nodes lost the key (no persistence): the holder
		// takes it again on every node, and its release is announced by
		// every node; the waiter, whose timed retry is a minute away,
		// takes the lock on hearing it.
		_ = l.Unlock(ctx) // the restarted nodes no longer hold it
		if l, err = holder.TryLock(ctx, key); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the waiter did not take the lock within 10 s of its release")
			cancel()
			<-got
		}
	})
}
