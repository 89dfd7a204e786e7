package redlocktest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// attemptCounter counts acquisition attempts and ends the caller's context
// at a bound, so that a retry loop without delay ends instead of spinning.
type attemptCounter struct {
	n      atomic.Int64
	limit  int64
	cancel context.CancelFunc
}

func (a *attemptCounter) Attempt(redlock.AttemptEvent) {
	if a.n.Add(1) == a.limit {
		a.cancel()
	}
}
func (a *attemptCounter) Extension(redlock.ExtensionEvent) {}
func (a *attemptCounter) End(redlock.EndEvent)             {}

// A lone waiter with the hand-off on waits R10's random delay between
// attempts, also when its attempt set keys on a minority (a split vote):
// behind a holder that keeps a majority, a Lock bounded by 1s makes at most
// 1s / WithRetryDelay's minimum attempts. The hand-off wakes the head of
// the queue after a split vote (waitRetry); it used to wake the waiter
// itself, which then retried after a jitter bounded by its attempt's
// duration: at the pace of the round trip, and over nodes that answer in no
// time, without any delay at all.
func TestHandoffLoneWaiterWaitsTheRetryDelay(t *testing.T) { // R10
	for _, latency := range []time.Duration{0, time.Millisecond} {
		t.Run("latency "+latency.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { loneWaiter(t, latency) })
		})
	}
}

func loneWaiter(t *testing.T, latency time.Duration) {
	{
		nodes, mems := redlocktest.NewMemNodes(5)
		for _, m := range mems {
			m.SetSlow(latency)
		}
		holder, err := redlock.New(nodes, redlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		l, err := holder.TryLock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		// The holder keeps its keys on a majority only: m4 and m5 are free.
		for _, m := range mems[3:] {
			if _, err := m.Release(t.Context(), redlock.DefaultKeyPrefix+"r", l.Value()); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		const retryMin = 10 * time.Millisecond
		count := &attemptCounter{limit: 10_000, cancel: cancel}
		waiter, err := redlock.New(nodes, redlock.WithHandoff(true), redlock.WithObserver(count),
			redlock.WithRetryDelay(retryMin, 2*retryMin))
		if err != nil {
			t.Fatal(err)
		}
		defer waiter.Close()
		start := time.Now()
		if _, err := waiter.Lock(ctx, "r"); err == nil {
			t.Fatal("Lock succeeded while another client holds a majority")
		}
		want := int64(time.Second/retryMin) + 1
		if got := count.n.Load(); got > want {
			t.Errorf("%d attempts in %v of fake time; R10's delay of at least %v allows %d", got, time.Since(start), retryMin, want)
		}
	}
}
