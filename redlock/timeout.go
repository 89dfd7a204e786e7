package redlock

import (
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
)

// How long a fan (engine.go) waits for its nodes: the adaptive node
// timeout that bounds its requests (rto, first), the patience for slow
// nodes (slowNode), and the wait on both (fan.wait, last). The context that carries the bound to the nodes
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
// Past the limit, a fan waits only for a slow node: one whose answers come
// after the limit (a healthy node on a loaded machine, or far away), which
// a fan that stopped at the limit would time out for good, so that with
// the quorum needing it no lock would be granted and no extension
// confirmed. A node is slow (Client.slow) from an answer without an error
// that came at or after its fan's limit, for one ttl of that fan; and, on
// probation, when a fan of a ttl timed it out: the fans of the next ttl
// wait for it too. For a grant, a node the client has no history of (it
// never answered, nor was timed out) is on probation from the client's
// birth: a new client (every dlm command is one) cannot know that its
// nodes are slow, and a first attempt that stopped at the limit would time
// out a healthy node that answers later than the limit (its new
// connection costs round trips of its own) and never learn it is slow, as
// a client that saw it turn slow does; a refused connection answers at
// once and is history. An extension or a release waits for such a node
// only among a client's first requests, while it has the history of fewer
// than a quorum of its nodes (a new client's Release or Resume of a
// handle: dlm release HANDLE, dlm extend HANDLE), and then no longer than
// a grant would; later ones follow requests a quorum answered without
// that node, and do not wait for it (slowWait). A fan of a ttl that starts
// while a node is slow gives its requests a longer deadline, its patience,
// and waits past the limit while a slow node has not answered, up to:
//
//	ttl/2 - drift  for a grant: its validity, ttl - elapsed - drift, then
//	               stays above half the ttl (the wait never costs more
//	               than it leaves). A fenced grant's second phase (the
//	               raise) waits, from its own start, half the validity
//	               left then (still counted from the first phase's T1),
//	               so that the validity at the grant holds one more such
//	               wait: a fenced lock is never granted with less
//	               validity than its first extension takes (it was, with
//	               "as long again": over nodes 3.5-4.5 s late at ttl
//	               10 s it was granted with 0.9-2.9 s and lost at its
//	               first extension, and no election kept a leader). A
//	               fenced grant is so made over nodes answering within
//	               about (ttl - drift)/3; slower ones time the raise out,
//	               and the error says the nodes answer too late for the
//	               ttl (AcquireError.Patience): a longer ttl grants over
//	               them. The first phase keeps ttl/2 - drift even for a
//	               lock kept by auto-extension: a new client's first
//	               request, and a rueidis client's after every timed-out
//	               one (the connection is made again), costs the new
//	               connection's round trips too, 4.4 s over nodes 1.1 s
//	               late, which a shorter first phase would time out on
//	               every attempt. Such a lock whose grant took longer
//	               than (ttl - drift - AutoExtendLead)/2, about a third
//	               of the ttl, is returned only after its first
//	               extension, which the extender sends at once over the
//	               connections the grant made, and so measures the
//	               nodes' round trip alone (life.go: keepable): no slower
//	               than that, the lock's extensions land with the lead
//	               left; slower, the lock is given back and Lock fails
//	               saying the nodes answer too late for the ttl
//	               (AcquireError.RoundTrip). Before, it was kept with
//	               its extensions landing with ttl - drift - 2 round
//	               trips left, 0.3 s over nodes 4.8 s late at ttl 10 s,
//	               under dlm lock's guard margin (1 s): the guard
//	               stopped the command of a lock the library kept;
//	ttl - drift    for an extension, whose lock is held anyway: it
//	               waits up to the lock's end (auto-extension's context);
//	               and for the release of a lock of that ttl (Unlock),
//	               past the release timeout: a late release costs no
//	               validity, and a release given up on a slow node that
//	               applied it would be reported as not confirmed. The
//	               caller's context still ends Unlock's wait. A lock's
//	               record write (PutRecord) waits as long (a quorum
//	               reached after the validity is no success), and a
//	               record read (ReadRecords, so an
//	               election's Leader) as a grant, of the client's ttl:
//	               an election over healthy slow nodes elects and tells
//	               its leader.
//
// A slow node that does not answer within a fan's patience (it froze) is
// slow no longer, and is not put on probation again for a ttl: a dead node
// (frozen, or cut off: one that refuses connections answers at once)
// costs the attempts that need it at most one patience per ttl (two in a
// new client's first ttl: a node it has no history of is on probation
// once timed out), and
// nothing when the quorum is there or impossible without it (the fan ends
// at its stop rule, as always). The requests of a patient fan all carry
// the longer deadline (a batching adapter bounds a batch by its requests'
// deadlines when it sends it): while a node is slow, another node that
// froze answers the fans that stopped without it at the patience, not at
// the limit. Client.slow costs a fan one atomic load per node.
//
// A node the client never met whose request of a patient fan went the
// whole patience unanswered, while the fan was decided without it (a node
// frozen since the client's start, under grants its quorum answered), is
// known to answer nothing (lateTimeout): met, and quiet for a ttl, as a
// slow node that froze. A long-lived client then waits for it as one that
// met it before it froze: the bound, not a grant's patience.
//
// A step that waits for every node's answer, not a quorum's, never waits
// a patience for a node that has not answered while a quorum did: it waits
// past its quorum only for a node it needs or one slow and answering
// (slowNode.answering: it answered late within a ttl), not for one only on
// probation or never met (frozen since a new client's start, maybe).
// Unlock releases the nodes that answered its acquisition at once and the
// others once they answered (lock.go: followRelease), as a writer's marks
// are removed (rw.go: unwait); a handle's extension count, a release
// marker, a record read and Inspect's read stop at a quorum and the limit
// (bounds.go: onQuorumPatiently; fan.busy: quorumRead); Close cuts the
// requests that wait only for nodes never met back to their own bound
// (Client.cutAtClose): it gives up the patience, not a request that a
// long-lived client's Close would have waited for.
//
// None of this touches safety: the validity is counted from T1, before the
// first request (R8.1, R9), however long the client waits; a longer wait
// only costs validity, and the limit and the patience keep it well under
// the ttl (R8.2).

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
// (rttvar), or false with no sample yet (wait.go: the hand-off's rank
// slot).
func (r *rto) smoothed() (srtt, rttvar time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.srtt, r.rttvar, r.sampled
}

// timeoutLimit is the most a fan with requests of ttl (0: none) waits for
// its nodes that are not slow: twenty node timeouts, and no more than a
// tenth of the ttl, but never less than the node timeout itself. A patient
// fan waits for its slow nodes longer (patience, below).
func timeoutLimit(nodeTimeout, ttl time.Duration) time.Duration {
	limit := 20 * nodeTimeout
	if ttl > 0 {
		limit = min(limit, ttl/10)
	}
	return max(limit, nodeTimeout)
}

// patience is how long a fan of req may wait for a slow node (above), 0
// when it may not wait past its limit (a request without a ttl): for a
// grant, until its validity would fall to half the ttl (a fenced grant's
// raise: newFanAfter); for an extension,
// until it could no longer extend (the lock's end bounds it sooner,
// through the extender's context); for a release of a lock of a ttl, as
// long (the key is gone by then anyway). The drift is the client's: a lock's own drift factor changes
// what the grant leaves, not how long the wait is worth.
func (c *Client) patience(req adapter.Request) time.Duration {
	if req.TTL <= 0 {
		return 0
	}
	if !grant(req.Op) {
		return req.TTL - drift(req.TTL, c.opts.lock.driftFactor)
	}
	return req.TTL/2 - drift(req.TTL, c.opts.lock.driftFactor)
}

// slowNode is what a client knows of one node's slowness (Client.slow),
// as times since the client was born (0: never).
type slowNode struct {
	// until: the fans that start before it wait for the node past their
	// limit (it answered after a limit, or is on probation).
	until atomic.Int64
	// quiet: the node is not put on probation before it (it was slow,
	// and did not answer within a fan's patience).
	quiet atomic.Int64
	// met: the node answered a request (an error that is not a timeout
	// counts) or was timed out: before, it is on probation.
	met atomic.Bool
	// late: until when the node is slow and answering: it answered a fan
	// after its limit (answeredLate), and has not failed to answer a
	// patient fan since. A node only on probation (timed out, or never
	// met) is slow, not answering: a step whose quorum answered does not
	// wait a patience for it (answering).
	late atomic.Int64
}

// answering reports whether the node is slow and answering at now (since
// c.born): it answered late within the last ttl (late).
func (s *slowNode) answering(now time.Duration) bool {
	return s.late.Load() > int64(now)
}

// slowFor reports whether a fan that starts at born (since c.born) waits
// for the node past its limit: it is slow, on probation, or, for a fan
// that waits for the nodes the client has no history of (unmet:
// slowWait), not met yet.
func (s *slowNode) slowFor(born time.Duration, unmet bool) bool {
	return s.until.Load() > int64(born) || unmet && !s.met.Load()
}

// slowWait returns how long a fan of req that starts at born (since
// c.born) lets its requests live, past its limit, while a node is slow for
// it (0: no node is), and whether it waits for the nodes the client has no
// history of (unmet; slowFor). A grant waits for them always. An extension
// or a release only while the client has the history of fewer than a
// quorum of its nodes: its first requests, which a new client's Release or
// Resume of a handle are (dlm release HANDLE, dlm extend HANDLE); and for
// them no longer than a grant's patience of their ttl, as a node slower
// than that granted nothing, and no longer than the client lives (Close
// ends the wait past the requests' own bound), as one of them may be
// frozen since the client's start. A client with a quorum's history had its requests answered
// without the nodes it never met, and an extension or release that waited
// a release's patience for a node that never answered would hold Close as
// long. Two atomic loads per node.
func (c *Client) slowWait(req adapter.Request, born time.Duration) (wait time.Duration, unmet bool) {
	p := c.patience(req)
	slow, unknown, met := false, false, 0
	for i := range c.slow {
		s := &c.slow[i]
		slow = slow || s.until.Load() > int64(born)
		if s.met.Load() {
			met++
		} else {
			unknown = true
		}
	}
	first := !grant(req.Op) && met < c.quorum
	unmet = grant(req.Op) || first
	switch {
	case p <= 0:
		return 0, unmet
	case slow:
		return p, unmet
	case unknown && first:
		return min(p, c.patience(adapter.Request{Op: adapter.OpAcquire, TTL: req.TTL})), unmet
	case unknown && unmet:
		return p, unmet
	}
	return 0, unmet
}

// knownSlow reports whether a node is slow for a fan that starts at born
// (since c.born): it answered late, or is on probation (slowFor without
// the nodes never met).
func (c *Client) knownSlow(born time.Duration) bool {
	for i := range c.slow {
		if c.slow[i].until.Load() > int64(born) {
			return true
		}
	}
	return false
}

// anySlow reports whether a node is slow for a fan of req that starts at
// born (since c.born): slowWait.
func (c *Client) anySlow(req adapter.Request, born time.Duration) bool {
	w, _ := c.slowWait(req, born)
	return w > 0
}

// grant reports whether a request of op waits for a slow node a grant's
// patience (ttl/2 - drift; patience).
func grant(op adapter.Op) bool {
	switch op {
	case adapter.OpExtend, adapter.OpExtendAll, adapter.OpRExtend,
		adapter.OpRelease, adapter.OpReleaseAnnounce, adapter.OpReleaseAll, adapter.OpReleaseAllAnnounce, adapter.OpRRelease,
		opPutRecord:
		return false
	}
	return true
}

// answered records that node i answered a request, with err: a node the
// client had no history of has one now, unless err is a timeout (await
// judges those: timedOut).
func (c *Client) answered(i int, err error) {
	if s := &c.slow[i]; !s.met.Load() && (err == nil || !isTimeout(err)) {
		s.met.Store(true)
	}
}

// answeredLate records that node i answered, without an error, at since
// c.born, at or after the limit of its fan of ttl: it is slow for a ttl.
func (c *Client) answeredLate(i int, at, ttl time.Duration) {
	s := &c.slow[i]
	until := int64(at + ttl)
	for {
		u := s.late.Load()
		if u >= until || s.late.CompareAndSwap(u, until) {
			break
		}
	}
	for {
		u := s.until.Load()
		if u >= until || s.until.CompareAndSwap(u, until) {
			return
		}
	}
}

// timedOut records that node i did not answer f before f's time ran out,
// at since c.born. A node that was slow for f did not answer within f's
// patience (frozen, cut off): it is slow no longer, nor put on probation
// for a ttl. Another is put on probation, unless it is quiet: the fans of
// the next ttl wait for it past their limit, in case it is slow, not
// failed.
func (c *Client) timedOut(f *fan, i int, at time.Duration) {
	s, ttl := &c.slow[i], f.ttl
	if !s.met.Load() {
		// Unknown: timed out once, it is on probation (below), even if
		// the fan was patient: a new connection's set-up may have taken
		// most of the patience, and the attempt after it is the first
		// one the node can answer.
		s.met.Store(true)
	}
	if u := s.until.Load(); u > int64(f.born) {
		if f.patient {
			s.until.CompareAndSwap(u, 0)
			s.late.Store(0)
			s.quiet.Store(int64(at + ttl))
		}
		return
	}
	if int64(at) >= s.quiet.Load() {
		s.until.Store(int64(at + ttl))
	}
}

// lateTimeout records that node i, which the client never met, answered
// the patient fan f only with err after f was decided without it: when
// err is the end of the request's own deadline, its patience (not the
// caller's end, nor Close's), the node did not answer within a grant's
// patience, as a slow node that froze does not (timedOut): it is met, and
// quiet for a ttl (not put on probation), as a node known to answer
// nothing. Else a node frozen since the client's start, never needed by a
// decision, would stay unmet for the client's whole life: every fan
// patient for it, and the first one that needs it waiting a whole
// patience where a client that met it waits the bound.
func (c *Client) lateTimeout(f *fan, i int, err error) {
	s := &c.slow[i]
	if !f.patient || !f.unmet || !f.adaptive || f.ttl <= 0 || s.met.Load() || !isTimeout(err) {
		return
	}
	now := time.Now()
	if now.Before(f.rc.deadline()) || f.rc.base.Err() != nil || pastDeadline(f.rc.base, now) {
		return
	}
	until := int64(f.born + now.Sub(f.t1) + f.ttl)
	for {
		q := s.quiet.Load()
		if q >= until || s.quiet.CompareAndSwap(q, until) {
			break
		}
	}
	s.met.Store(true)
}

// wait blocks until the stop rule holds, the caller's context ends, or the
// time runs out: the requests' deadline (nctx's: the limit, or the
// patience of a fan that waits for a slow node), or for an adaptive fan
// the adaptive bound, which reports timedOut. One timer serves both: it is
// never set past the deadline.
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
			// The deadline passed: nctx's (R8.2).
			f.rc.state.CompareAndSwap(reqLive, reqExpired)
			return false
		}
		// rearm waits on for d, and never past the deadline.
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
		// another within the limit is busy, not failed; a slow one may
		// answer up to the patience: wait on, one more bound at a time,
		// until the deadline ends the wait (rto, above).
		if f.busy(now) {
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

// busy reports whether a node that has not answered the fan yet is worth
// waiting for at now: it has answered another request (without an error)
// within the limit, and the fan's limit has not passed (rto, above: a
// batching adapter hears from a node once per batch, and a batch may
// outlast the bound); or the fan is patient and the node slow (or
// unknown), and, for a read once a quorum answered it (quorumRead), slow
// and answering.
func (f *fan) busy(now time.Time) bool {
	c := f.c
	within := now.Sub(f.t1) < f.limit
	since := int64(now.Sub(c.born) - f.limit)
	at := now.Sub(c.born)
	f.mu.Lock()
	defer f.mu.Unlock()
	// A read whose quorum answered waits on only for a node that is slow
	// and answering, not for one that never answered (frozen since a new
	// client's start) nor one only on probation (answering).
	quorum := f.quorumRead && f.replied >= c.quorum
	for i, r := range f.rs {
		if !r.none {
			continue
		}
		if within && c.heard[i].Load() > since {
			return true
		}
		if f.patient && c.slow[i].slowFor(f.born, f.unmet) && (!quorum || c.slow[i].answering(at)) {
			return true
		}
	}
	return false
}
