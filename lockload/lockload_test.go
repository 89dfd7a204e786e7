package lockload_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"dlm/lockload"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

func TestFairness(t *testing.T) {
	tests := []struct {
		counts []int64
		want   float64
	}{
		{nil, 0},
		{[]int64{0, 0}, 0},
		{[]int64{5, 5, 5}, 1},
		{[]int64{2, 8, 4}, 4},
		{[]int64{0, 3}, math.Inf(1)},
	}
	for _, tt := range tests {
		if got := lockload.Fairness(tt.counts); got != tt.want {
			t.Errorf("Fairness(%v) = %v, want %v", tt.counts, got, tt.want)
		}
	}
}

// HoldBlocking holds at least as long as asked.
func TestHoldBlocking(t *testing.T) {
	for _, d := range []time.Duration{0, 100 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		lockload.HoldBlocking(d)
		if el := time.Since(start); el < d {
			t.Errorf("HoldBlocking(%v) returned after %v", d, el)
		}
	}
}

func TestQuantile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.5, 3}, {0.99, 5}, {1, 5}} {
		if got := lockload.Quantile(append([]time.Duration(nil), ds...), tt.q); got != tt.want {
			t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := lockload.Quantile(nil, 0.5); got != 0 {
		t.Errorf("Quantile(nil) = %v, want 0", got)
	}
}

// The workloads against 5 real redis-server nodes, briefly: they complete
// pairs and critical sections and leave no key behind.
func TestWorkloads(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	c, err := rueidis.Dial(cl.URLs(), redlock.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := lockload.Client(c)
	ctx := t.Context()
	if r := lockload.Throughput(ctx, l, "tp/", 4, 200*time.Millisecond); r.PerSec <= 0 || r.FirstErr != nil {
		t.Errorf("Throughput = %+v, want pairs and no failure", r)
	}
	s, err := lockload.Sequential(ctx, l, "seq", 100*time.Millisecond)
	if err != nil || s.Pairs == 0 || s.PairP50 <= 0 || s.PairP99 < s.PairP50 {
		t.Errorf("Sequential = %+v, %v", s, err)
	}
	if d, err := lockload.AcquireLatency(ctx, l, "lat", 5); err != nil || d <= 0 {
		t.Errorf("AcquireLatency = %v, %v", d, err)
	}
	if r := lockload.Contention(ctx, l, "cont", 4, time.Millisecond, 300*time.Millisecond); r.PerSec <= 0 {
		t.Errorf("Contention = %+v, want critical sections", r)
	}
	if r := lockload.ContentionHeld(ctx, l, "contb", 4, time.Millisecond, 300*time.Millisecond, lockload.HoldBlocking); r.PerSec <= 0 {
		t.Errorf("ContentionHeld(HoldBlocking) = %+v, want critical sections", r)
	}
	redlocktest.Eventually(t, 3*time.Second, func() bool {
		for _, s := range cl.Servers {
			if len(s.MustKeys(redlock.DefaultKeyPrefix)) > 0 {
				return false
			}
		}
		return true
	}, "lock keys left after the workloads")
}

// failLocker's Lock fails at once with err.
type failLocker struct{ err error }

func (f failLocker) TryLock(ctx context.Context, key string) (func(context.Context) error, error) {
	return nil, f.err
}
func (f failLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	return nil, f.err
}

// A Lock call that fails because the run's deadline passed is not a Lock
// that gave up, even when the client saw the deadline before the
// context's timer ran: the across-processes bench counted hundreds of
// such calls (761 in one quiet run) as given up.
func TestContentionCountsOnlyRealFailures(t *testing.T) {
	late := fmt.Errorf("redlock: lock not acquired: %w", context.DeadlineExceeded)
	if r := lockload.ContentionHeld(t.Context(), failLocker{late}, "k", 2, time.Millisecond, 20*time.Millisecond, time.Sleep); r.Failed != 0 {
		t.Errorf("a deadline error counted as %d failures, want 0", r.Failed)
	}
	if r := lockload.ContentionHeld(t.Context(), failLocker{errors.New("refused")}, "k", 2, time.Millisecond, 20*time.Millisecond, time.Sleep); r.Failed == 0 {
		t.Error("a real failure was not counted")
	}
}
