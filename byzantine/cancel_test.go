package byzantine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"dlm/byzantine"
)

// endsAfter is a context that ends (Err says so) once it was asked more
// than after times: it ends in the middle of a run, at a point counted in
// looks rather than in time.
type endsAfter struct {
	context.Context
	after int64
	asked atomic.Int64
}

func (c *endsAfter) Err() error {
	if c.asked.Add(1) > c.after {
		return context.Canceled
	}
	return nil
}

// TestRunStopsInsideARound: a run whose context ends in the middle of a
// round stops there, not at the next round: OM's last round with many
// generals is nearly all of the work (tens of seconds), and Ctrl-C waited
// for it (regression: Run and RunInteractive looked at the context once a
// round, so a context that ended after those m+2 looks went unseen).
func TestRunStopsInsideARound(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = byzantine.OM, 10, 3
	looks := int64(cfg.MaxTraitors + 2) // once a round
	t.Run("one commander", func(t *testing.T) {
		_, err := byzantine.Run(&endsAfter{Context: t.Context(), after: looks}, cfg)
		if !errors.Is(err, byzantine.ErrStopped) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want a run stopped by its context (ErrStopped and context.Canceled)", err)
		}
	})
	t.Run("interactive", func(t *testing.T) {
		ic := byzantine.InteractiveConfig{Config: cfg, Values: make([]byzantine.Order, cfg.Generals)}
		for i := range ic.Values {
			ic.Values[i] = byzantine.Attack
		}
		_, err := byzantine.RunInteractive(&endsAfter{Context: t.Context(), after: looks}, ic)
		if !errors.Is(err, byzantine.ErrStopped) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want a run stopped by its context (ErrStopped and context.Canceled)", err)
		}
	})
}

// TestInteractiveSizeCountsEveryInstance: an interactive run is n
// instances of the algorithm, and the bound on a run's messages holds for
// all of them together (regression: it was checked on one instance, so
// OM(5) with 16 generals, 64 million messages in all, was accepted).
func TestInteractiveSizeCountsEveryInstance(t *testing.T) {
	for _, tt := range []struct {
		n, m int
		ok   bool
	}{
		{16, 5, false}, // 16 instances of 4.0 million messages
		{13, 4, true},  // 13 of 108,384
	} {
		cfg := byzantine.DefaultConfig()
		cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = byzantine.OM, tt.n, tt.m
		ic := byzantine.InteractiveConfig{Config: cfg, Values: make([]byzantine.Order, tt.n)}
		for i := range ic.Values {
			ic.Values[i] = byzantine.Attack
		}
		err := ic.Validate()
		if got := err == nil; got != tt.ok {
			t.Errorf("OM(%d) with %d generals: Validate() = %v, want accepted %v", tt.m, tt.n, err, tt.ok)
		}
		if err != nil && !errors.Is(err, byzantine.ErrTooLarge) {
			t.Errorf("OM(%d) with %d generals: %v does not wrap ErrTooLarge", tt.m, tt.n, err)
		}
	}
}

// TestStoppedErrorSaysTheStopOnce: the stop of many generals is one
// error naming ErrStopped and the context's end, followed by each other
// cause once; what the stop did to each general is not repeated.
func TestStoppedErrorSaysTheStopOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	other := errors.New("general 2: listen: address already in use")
	var errs []error
	for i := range 5 {
		errs = append(errs, fmt.Errorf("%w: general %d round 1: %w", byzantine.ErrStopped, i, context.Canceled), nil)
	}
	errs = append(errs, other, other)
	err := byzantine.StoppedError(ctx, "general 0", errs...)
	if !errors.Is(err, byzantine.ErrStopped) || !errors.Is(err, context.Canceled) || !errors.Is(err, other) {
		t.Errorf("got %v, want ErrStopped, context.Canceled and the other cause", err)
	}
	want := "byzantine: run stopped: general 0: context canceled\n" + other.Error()
	if got := err.Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
