package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestReqCtxErrStays checks the context contract that a reqCtx broke
// before: once Err returned an error, later calls return the same one,
// even when Done (a blocking adapter, a context derived from it) is first
// asked for after base ended too. context.WithDeadline keeps the first.
// Seen failing before the fix: "expired, then base cancelled" reported
// context.Canceled after DeadlineExceeded, and "cancelled, then base
// cancelled with a cause" reported the base's state.
func TestReqCtxErrStays(t *testing.T) {
	const timeout = 50 * time.Millisecond
	errCause := errors.New("the caller's cause")
	tests := []struct {
		name  string
		first func(r *reqCtx) // ends r, before base ends
		want  error
	}{
		{"expired, then base cancelled", func(r *reqCtx) {
			r.unwatched.Store(true)
			time.Sleep(timeout + time.Millisecond)
		}, context.DeadlineExceeded},
		{"expired by the wait's timer, then base cancelled", func(r *reqCtx) {
			time.Sleep(timeout + time.Millisecond)
			r.state.CompareAndSwap(reqLive, reqExpired) // as fan.wait marks it
		}, context.DeadlineExceeded},
		{"cancelled, then base cancelled", func(r *reqCtx) {
			r.cancel()
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base, cancelBase := context.WithCancelCause(t.Context())
				defer cancelBase(nil)
				var r reqCtx
				r.init(base, time.Now(), timeout)
				tt.first(&r)
				if err := r.Err(); !errors.Is(err, tt.want) {
					t.Fatalf("Err() after the event = %v, want %v", err, tt.want)
				}
				cancelBase(errCause)
				if err := r.Err(); !errors.Is(err, tt.want) {
					t.Errorf("Err() after base ended = %v, want %v (the first stays)", err, tt.want)
				}
				select {
				case <-r.Done():
				default:
					t.Errorf("Done is not closed while Err() is non-nil")
				}
				if err := r.Err(); !errors.Is(err, tt.want) {
					t.Errorf("Err() after Done = %v, want %v (the first stays)", err, tt.want)
				}
				child, stop := context.WithCancel(&r)
				defer stop()
				if err := child.Err(); !errors.Is(err, tt.want) {
					t.Errorf("a derived context's Err() = %v, want %v", err, tt.want)
				}
				if got := context.Cause(&r); !errors.Is(got, tt.want) {
					t.Errorf("context.Cause = %v, want %v (base's cause came after)", got, tt.want)
				}
				if got, ok := r.Deadline(); !ok || !got.Equal(r.deadline()) {
					t.Errorf("Deadline() = %v, %v, want %v, true", got, ok, r.deadline())
				}
				r.cancel()
			})
		})
	}
}
