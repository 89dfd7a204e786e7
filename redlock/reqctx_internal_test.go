package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type ctxKey struct{}

// TestReqCtx checks that a fan's request context (reqCtx) behaves as
// context.WithDeadline(base, t1+timeout) with cancel, whether Done is asked
// for before the event, after it, or never, once no wait watches its
// deadline (unwatched, as after the fan's decision; TestReqCtxWatched
// covers the wait).
func TestReqCtx(t *testing.T) {
	const timeout = 50 * time.Millisecond
	tests := []struct {
		name string
		// event ends the context: it returns the error Err must report.
		event func(r *reqCtx, cancelBase context.CancelFunc) error
	}{
		{"deadline", func(*reqCtx, context.CancelFunc) error {
			time.Sleep(timeout + time.Millisecond)
			return context.DeadlineExceeded
		}},
		{"cancel", func(r *reqCtx, _ context.CancelFunc) error {
			r.cancel()
			return context.Canceled
		}},
		{"base cancelled", func(_ *reqCtx, cancelBase context.CancelFunc) error {
			cancelBase()
			return context.Canceled
		}},
		{"cancel after the deadline", func(r *reqCtx, _ context.CancelFunc) error {
			time.Sleep(timeout + time.Millisecond)
			_ = r.Err() // the deadline is seen first: it stays
			r.cancel()
			return context.DeadlineExceeded
		}},
	}
	for _, tt := range tests {
		for _, doneFirst := range []bool{false, true} {
			name := tt.name
			if doneFirst {
				name += "/done first"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					base, cancelBase := context.WithCancel(context.WithValue(t.Context(), ctxKey{}, "v"))
					defer cancelBase()
					var r reqCtx
					t1 := time.Now()
					r.init(base, t1, timeout)
					r.unwatched.Store(true)
					if got, ok := r.Deadline(); !ok || !got.Equal(t1.Add(timeout)) {
						t.Errorf("Deadline() = %v, %v, want %v, true", got, ok, t1.Add(timeout))
					}
					if got := r.Value(ctxKey{}); got != "v" {
						t.Errorf("Value = %v, want base's v", got)
					}
					var done <-chan struct{}
					var child context.Context
					if doneFirst {
						done = r.Done()
						var stop context.CancelFunc
						child, stop = context.WithCancel(&r)
						defer stop()
					}
					if err := r.Err(); err != nil {
						t.Fatalf("Err() before the event = %v, want nil", err)
					}
					want := tt.event(&r, cancelBase)
					synctest.Wait()
					if err := r.Err(); !errors.Is(err, want) {
						t.Errorf("Err() = %v, want %v", err, want)
					}
					if done == nil {
						done = r.Done()
					}
					select {
					case <-done:
					default:
						t.Errorf("Done is not closed after the event")
					}
					if err := r.Err(); !errors.Is(err, want) {
						t.Errorf("Err() after Done = %v, want %v", err, want)
					}
					if child != nil && !errors.Is(child.Err(), want) {
						t.Errorf("a derived context's Err() = %v, want %v", child.Err(), want)
					}
					if got := r.Value(ctxKey{}); got != "v" {
						t.Errorf("Value after Done = %v, want base's v", got)
					}
					r.cancel() // releases the standard context's timer, if any
				})
			})
		}
	}
}

// TestReqCtxBaseDeadline checks that a base with an earlier deadline
// bounds a reqCtx.
func TestReqCtxBaseDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		want, _ := base.Deadline()
		var r reqCtx
		r.init(base, time.Now(), time.Second)
		r.unwatched.Store(true)
		if got, _ := r.Deadline(); !got.Equal(want) {
			t.Errorf("Deadline() = %v, want base's %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
		if err := r.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err() = %v, want %v", err, context.DeadlineExceeded)
		}
	})
}

// TestReqCtxWatched checks that while a fan's wait watches the deadline,
// Err reads no clock and reports what the wait marked, and reads the clock
// once unwatched.
func TestReqCtxWatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r reqCtx
		r.init(t.Context(), time.Now(), 10*time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		if err := r.Err(); err != nil {
			t.Errorf("watched, past the deadline, not marked: Err() = %v, want nil (the wait's timer marks it)", err)
		}
		r.unwatched.Store(true)
		if err := r.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("unwatched, past the deadline: Err() = %v, want %v", err, context.DeadlineExceeded)
		}
	})
}
