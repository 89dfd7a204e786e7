package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The fan's request context, hand-written because the standard one costs
// more on the hot path: BenchmarkFanContext (bench_reqctx_internal_test.go)
// measured 0.2-0.8 us and no allocation of its own (it lives in the fan)
// for reqCtx against 1.4-2.6 us and 4 allocations for context.WithDeadline
// per fan, on a loaded machine; a pair (acquire and release) makes two
// fans. TestReqCtx checks it against the standard library's contract.

// reqCtx is the context of a fan's requests: base's values and
// cancellation, a deadline, and the fan's cancel. It behaves as
// context.WithDeadline(base, deadline) but costs nothing until someone asks
// for Done: a batching adapter (redlock/internal/batch) asks only for Err
// and Deadline, which need no timer, no channel, no lock and no
// registration with base (a context often shared by many callers, whose
// lock WithDeadline takes to register and again to unregister). The first
// Done (a blocking adapter, a context derived from this one) makes the
// standard context, and from then on Err, Done and Value are its.
//
// Until the fan is decided, the timer of its wait (fan.wait) watches the
// deadline, as a timerCtx's timer does, and Err reads no clock (a clock
// read is not cheap on every machine, and Err is asked twice per request);
// after it (unwatched), Err reads the clock. The zero value is not usable:
// call init.
type reqCtx struct {
	base      context.Context
	t1        time.Time     // the fan's start
	d         time.Duration // the deadline is t1 + d
	state     atomic.Uint32 // reqLive, then the first of the others, for good
	unwatched atomic.Bool   // no timer watches the deadline: Err reads the clock

	mu  sync.Mutex                // makes std once
	std atomic.Pointer[stdReqCtx] // made by standard
}

// The states of a reqCtx before it has a standard context.
const (
	reqLive     uint32 = iota
	reqCanceled        // cancel ran
	reqExpired         // the deadline passed
	reqBaseDone        // base ended: Err is base's
)

// stdReqCtx is the standard context that stands for a reqCtx.
type stdReqCtx struct {
	ctx  context.Context
	stop context.CancelFunc
}

var _ context.Context = (*reqCtx)(nil)

// init readies r with a deadline timeout after t1, or base's, if earlier.
func (r *reqCtx) init(base context.Context, t1 time.Time, timeout time.Duration) {
	r.base, r.t1, r.d = base, t1, timeout
	if dl, ok := base.Deadline(); ok && dl.Before(t1.Add(timeout)) {
		r.d = dl.Sub(t1)
	}
}

// deadline is r's deadline.
func (r *reqCtx) deadline() time.Time { return r.t1.Add(r.d) }

// Deadline returns r's deadline (context.Context).
func (r *reqCtx) Deadline() (time.Time, bool) { return r.deadline(), true }

// Err is context.Canceled once r was cancelled, base's error once base
// ended, context.DeadlineExceeded once the deadline passed, else nil
// (context.Context); the first of them stays, also once Done made the
// standard context (standard). A non-nil answer before that is given
// under r.mu, where standard reads the state, so that the standard context
// is made with the error already reported.
func (r *reqCtx) Err() error {
	if s := r.std.Load(); s != nil {
		return s.ctx.Err()
	}
	if r.state.Load() == reqLive && r.base.Err() == nil && (!r.unwatched.Load() || time.Since(r.t1) < r.d) {
		return nil // the fast path: no lock
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.std.Load(); s != nil {
		return s.ctx.Err()
	}
	if r.state.Load() == reqLive {
		switch {
		case r.base.Err() != nil:
			r.state.CompareAndSwap(reqLive, reqBaseDone)
		case r.unwatched.Load() && time.Since(r.t1) >= r.d:
			r.state.CompareAndSwap(reqLive, reqExpired)
		}
	}
	switch r.state.Load() {
	case reqCanceled:
		return context.Canceled
	case reqExpired:
		return context.DeadlineExceeded
	case reqBaseDone:
		return r.base.Err()
	}
	return nil
}

// Done returns a channel closed when Err becomes non-nil (context.Context).
func (r *reqCtx) Done() <-chan struct{} {
	return r.standard().Done()
}

// Value returns base's value for key (context.Context). Once Done was
// asked for, it is the standard context's, so that a context derived from
// r registers with it as with any cancelable context (no goroutine).
func (r *reqCtx) Value(key any) any {
	if s := r.std.Load(); s != nil {
		return s.ctx.Value(key)
	}
	return r.base.Value(key)
}

// standard returns the standard context that stands for r, made on the
// first call. Once r ended (cancel, or the deadline that the wait's timer
// marked or Err saw), it is made ended with that error, whatever base did
// since: a context's first error stays, and base may have ended after it.
func (r *reqCtx) standard() context.Context {
	if s := r.std.Load(); s != nil {
		return s.ctx
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.std.Load()
	if s == nil {
		s = &stdReqCtx{}
		switch r.state.Load() {
		case reqCanceled:
			s.ctx, s.stop = newEndedCtx(r.base, r.deadline(), context.Canceled), func() {}
		case reqExpired:
			s.ctx, s.stop = newEndedCtx(r.base, r.deadline(), context.DeadlineExceeded), func() {}
		default:
			// Live, or base ended first: made from base with the same
			// deadline, it has base's error (and cause), if any.
			s.ctx, s.stop = context.WithDeadline(r.base, r.deadline())
		}
		r.std.Store(s)
		if r.state.Load() == reqCanceled {
			s.stop()
		}
	}
	return s.ctx
}

// endedCtx is the standard context of a reqCtx that ended before Done was
// asked for: its Done is closed and its Err is the reqCtx's; its values are
// base's (without base's cancellation, whose cause came later if at all).
type endedCtx struct {
	context.Context // context.WithoutCancel(base)
	deadline        time.Time
	err             error
	done            chan struct{} // closed
}

// newEndedCtx returns the ended standard context of a reqCtx over base.
func newEndedCtx(base context.Context, deadline time.Time, err error) endedCtx {
	done := make(chan struct{})
	close(done)
	return endedCtx{context.WithoutCancel(base), deadline, err, done}
}

func (e endedCtx) Deadline() (time.Time, bool) { return e.deadline, true }
func (e endedCtx) Done() <-chan struct{}       { return e.done }
func (e endedCtx) Err() error                  { return e.err }

// cancel cancels r; later calls do nothing.
func (r *reqCtx) cancel() {
	// Either standard sees the state or this sees its context (or both).
	r.state.CompareAndSwap(reqLive, reqCanceled)
	if s := r.std.Load(); s != nil {
		s.stop()
	}
}
