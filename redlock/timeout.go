package redlock

import (
	"sync"
	"time"
)

// How long a fan (engine.go) waits for its nodes: the adaptive node
// timeout that bounds its requests (rto, first), and the wait on it
// (fan.wait, after it). The context that carries the bound to the nodes
// is the fan's own (engine.go: reqCtx).

// The adaptive node timeout (R8.2). WithNodeTimeout is a floor, not a fixed
// bound: a machine whose cores are busy (the client's, the nodes', or both)
// answers every request late, and a fixed 50 ms would then report healthy
// nodes as failed, fail acquisitions that a moment's patience would have
// granted, and leave their keys to expire. So the client times its nodes as
// TCP times its segments (RFC 6298): it keeps a smoothed round-trip time
// (srtt) and its mean deviation (rttvar) of the answer that decides, and a
// node that has not answered within
//
//	clamp(srtt + 4 x rttvar, node timeout, limit)
//
// of the request's start is timed out, where limit = max(node timeout,
// min(20 x node timeout, ttl / 10)). The sample of a fan is the time to its
// quorum-th answer that is not an error (the answer a decision waits for,
// late answers included): one slow, frozen or partitioned node among N
// never moves it, and an error (a refused connection) answers at once. A
// fan whose time ran out before a quorum of nodes answered doubles the
// timeout of the fans after it (up to limit), until a sample comes: a
// load that rises faster than the average follows is caught by the next
// attempt. A client that has no sample yet (just made) waits up to limit.
// When the bound passes, a fan reads it again, and waits on, one bound at a
// time up to limit, while a node that has not answered it has answered
// another request within the last limit (Client.heard; a batching adapter
// hears from a node once per batch, and under load a batch outlasts the
// bound): that node is busy, not failed. A node silent for longer than the
// limit (frozen, cut off) is timed out at the bound; one that has just
// frozen costs the attempts that need it up to the limit. A timer
// that fires late by more than a quarter of the bound means the client was
// not running (its answers may be waiting unread): the fan judges one bound
// later.
//
// None of this touches safety: the validity is counted from T1, before the
// first request (R8.1, R9), however long the client waits; a longer wait
// only costs validity, and the limit keeps it well under the ttl (R8.2).

// rto is a client's round-trip estimator. The zero value is a client with
// no sample.
type rto struct {
	mu      sync.Mutex
	srtt    time.Duration
	rttvar  time.Duration
	sampled bool
	backoff uint8 // doublings since the last sample

	// timers holds the stopped timers of the fans' waits (fan.wait), for
	// reuse: a new timer is three allocations, and every fan that is not
	// decided at once waits on one.
	timers sync.Pool
}

// timer returns a timer that fires after d, reused when one is free.
func (r *rto) timer(d time.Duration) *time.Timer {
	if t, _ := r.timers.Get().(*time.Timer); t != nil {
		// Stopped and drained by putTimer: no stale tick can be
		// received, and Reset starts it afresh.
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// putTimer stops t and keeps it for the next wait. A tick that came before
// Stop is drained: Go 1.23's timers drop it themselves, but a program run
// with GODEBUG=asynctimerchan=1 has the older ones, whose channel keeps it,
// and the next wait would take it for its own and time its nodes out.
func (r *rto) putTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	r.timers.Put(t)
}

// maxBackoff bounds the doublings (the limit caps the timeout anyway).
const maxBackoff = 10

// sample records the time a fan took to its quorum-th answer (RFC 6298,
// 2.2 and 2.3), and ends any backoff.
func (r *rto) sample(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backoff = 0
	if !r.sampled {
		r.srtt, r.rttvar, r.sampled = d, d/2, true
		return
	}
	dev := r.srtt - d
	if dev < 0 {
		dev = -dev
	}
	r.rttvar = (3*r.rttvar + dev) / 4
	r.srtt = (7*r.srtt + d) / 8
}

// expired records a fan whose time ran out before a quorum of nodes
// answered (RFC 6298, 5.5: back off).
func (r *rto) expired() {
	r.mu.Lock()
	if r.sampled && r.backoff < maxBackoff {
		r.backoff++
	}
	r.mu.Unlock()
}

// timeout returns the bound of the next fan's requests, between floor and
// limit (limit >= floor).
func (r *rto) timeout(floor, limit time.Duration) time.Duration {
	r.mu.Lock()
	sampled, srtt, rttvar, backoff := r.sampled, r.srtt, r.rttvar, r.backoff
	r.mu.Unlock()
	if !sampled {
		return limit
	}
	t := max(srtt+4*rttvar, floor)
	for range backoff {
		if t >= limit {
			break
		}
		t *= 2
	}
	return min(t, limit)
}

// smoothed returns the smoothed round trip (srtt) and its mean deviation
// (rttvar), or false with no sample yet (retry.go: the hand-off's rank
// slot).
func (r *rto) smoothed() (srtt, rttvar time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.srtt, r.rttvar, r.sampled
}

// timeoutLimit is the most a fan with requests of ttl (0: none) waits for
// its nodes: twenty node timeouts, and no more than a tenth of the ttl, but
// never less than the node timeout itself.
func timeoutLimit(nodeTimeout, ttl time.Duration) time.Duration {
	limit := 20 * nodeTimeout
	if ttl > 0 {
		limit = min(limit, ttl/10)
	}
	return max(limit, nodeTimeout)
}

// wait blocks until the stop rule holds, the caller's context ends, or the
// time runs out: the limit (nctx's deadline), or for an adaptive fan the
// adaptive bound, which reports timedOut. One timer serves both: it is
// never set past the limit.
func (f *fan) wait(ready <-chan struct{}) (timedOut bool) {
	limit := f.rc.deadline()
	due := limit
	if f.adaptive {
		due = minTime(f.t1.Add(f.timeout), limit)
	}
	timer := f.c.rtt.timer(time.Until(due))
	defer f.c.rtt.putTimer(timer)
	// A caller's context that ends ends the wait; base is the caller's
	// own context in every fan, but the requests derive from base.
	cancelled, baseDone := f.ctx.Done(), f.rc.base.Done()
	for {
		select {
		case <-ready:
			return false
		case <-cancelled:
			return false
		case <-baseDone:
			return false
		case <-timer.C:
		}
		now := time.Now()
		if !now.Before(limit) {
			// The limit passed: nctx's deadline (R8.2).
			f.rc.state.CompareAndSwap(reqLive, reqExpired)
			return false
		}
		// rearm waits on for d, and never past the limit.
		rearm := func(d time.Duration) { timer.Reset(min(d, limit.Sub(now))) }
		if !f.adaptive {
			rearm(limit.Sub(now))
			continue
		}
		// A timer that fires late by more than a quarter of the bound
		// says the client was not running (a busy machine, a pause): the
		// answers may be waiting, unread. Its own stall is not the
		// nodes' fault: judge one bound later.
		if late := now.Sub(due); late > f.timeout/4 {
			due = now.Add(f.timeout)
			rearm(f.timeout)
			continue
		}
		// The bound passed; the fans that ran out meanwhile may have
		// raised it (rto, above): wait on to the new one.
		if d := f.c.nodeTimeout(f.req.TTL); d > f.timeout {
			if left := d - now.Sub(f.t1); left > 0 {
				f.timeout, due = d, f.t1.Add(d)
				rearm(left)
				continue
			}
		}
		// A node that has not answered this request but has answered
		// another within the limit is busy, not failed: wait on, one
		// more bound at a time, until the limit ends the wait (rto, above).
		if f.busy() {
			due = now.Add(f.timeout)
			rearm(f.timeout)
			continue
		}
		return true
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// busy reports whether a node that has not answered the fan yet has
// answered another request (without an error) within the limit (rto, above):
// a batching adapter hears from a node once per batch, and a batch may
// outlast the bound.
func (f *fan) busy() bool {
	c := f.c
	since := int64(time.Since(c.born) - f.limit)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rs {
		if r.none && c.heard[i].Load() > since {
			return true
		}
	}
	return false
}
