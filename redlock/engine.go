package redlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
)

// The engine. Every operation that goes to all nodes (an acquisition, the
// fencing raise, an extension, a release, a hand-over) is one fan: the same
// request started on every node at once (R15), through AsyncNode.Start when
// every node has it (no goroutine per node; the adapter may batch), else on
// one goroutine per node that calls the blocking method, or the fan's
// nodeCall, which a feature gives for requests that only blocking methods
// carry (fencing's phases, records). The answers are collected until the
// fan's stop rule holds (stopDecided: the pure quorum rule, decide in
// client.go, says reached or impossible; stopQuorum: a quorum succeeded or
// every node answered) or the node timeout passes (R8.2). The caller then
// settles the fan once, which fixes the rule for the answers still to come
// (late answers): a failed acquisition releases every node's key, early
// and late (R8.5, R11), but for the nodes that refused it (releaseNode);
// every other operation ignores them.
//
// A fan is a state machine (fanState): open while it collects answers,
// ready once its stop rule holds, decided once its caller stopped waiting
// (answers from then on are late), and settled with the rule for what is
// still to come: ignore it, or release every node (a failed acquisition),
// recording the late answers or not. Three kinds of event move it, each
// from its own receiver: a node's answer to the request (fan.Receive), and
// the answer to the release of a node that had answered before the
// decision (earlyRelease) or after it (lateRelease). The fan counts as one
// piece of the client's background work (Client.bg) from its start until
// every request and every release it made is answered and it is settled,
// so Close waits for all of it and nothing is left on a node.
//
// How long a fan waits is timeout.go's (the adaptive node timeout and the
// wait on it); the context its requests carry to the nodes is its own
// (reqCtx, at the end of this file).

// stopRule is when the caller of a fan may go on.
type stopRule uint8

const (
	// stopDecided: as soon as decide says reached or impossible.
	stopDecided stopRule = iota
	// stopQuorum: as soon as a quorum succeeded, or every node answered.
	stopQuorum
	// stopAll: as soon as every node answered (a read, record.go).
	stopAll
)

// nodeCall runs a fan's request on node i by a blocking method that
// AsyncNode does not carry (fencing's phases, records), and keeps what the
// node answered beyond yes or no for the feature that made the fan: it
// writes that before its answer, which Receive takes under the fan's mu.
type nodeCall interface {
	call(f *fan, i int) (bool, error)
}

// fanState is where a fan is in its life. It only moves forward: open,
// then ready (maybe skipped), decided, and one of the settled states.
type fanState uint8

const (
	// fanOpen: answers are counted, and the stop rule does not hold yet.
	fanOpen fanState = iota
	// fanReady: the stop rule holds (ready fired); answers still count.
	fanReady
	// fanDecided: await returned; answers from now on are late.
	fanDecided
	// fanIgnoring: settled; late answers are ignored.
	fanIgnoring
	// fanReleasing: settled as a failed acquisition; every node is
	// released, at once where it answered, else as it answers.
	fanReleasing
	// fanRecording: fanReleasing, and the late answers are recorded (a
	// final attempt reports them).
	fanRecording
)

// settled reports whether s is one of the settled states.
func (s fanState) settled() bool { return s >= fanIgnoring }

// fan is one request to every node and the collection of its answers.
type fan struct {
	c       *Client
	req     adapter.Request
	stop    stopRule
	ctx     context.Context // the caller's: a cancelled caller is not a node timeout
	nctx    context.Context // the requests' context, bounded by the node timeout: &rc
	rc      reqCtx          // nctx, in the fan's allocation (cancel)
	t1      time.Time       // before the first request (R8.1)
	born    time.Duration   // t1 - c.born, for Client.heard
	timeout time.Duration   // the node timeout of this fan: nctx's, or the adaptive bound (timeout.go)
	// adaptive: the wait for answers ends at the adaptive bound (newFan),
	// not at nctx's deadline (the limit); await then cancels nctx.
	adaptive bool
	limit    time.Duration // of an adaptive fan: the most it waits for a node that is not slow
	// patient: an adaptive fan that started while a node was slow: nctx's
	// deadline is its patience, and it waits past the limit for a slow
	// node (timeout.go).
	patient bool
	// unmet: the fan waits for the nodes the client never met, as for
	// slow ones (timeout.go: slowWait).
	unmet bool
	// quorumRead: a read whose quorum's answers may tell (a record read):
	// once a quorum answered, it waits past its bound only for a node
	// that is slow and answering (timeout.go: busy).
	quorumRead bool
	// cut: Close cuts the requests back to keep from t1 (Client.cutAtClose);
	// both are set before the fan is sent, under the client's mu.
	cut  bool
	keep time.Duration
	ttl  time.Duration // of the lock the fan grants or extends (0: none), for Client.slow
	// waited: a patient fan's patience (0: it waits for no node past its
	// limit), which an acquisition's error reports when its slow nodes
	// timed out by it (AcquireError.Patience).
	waited time.Duration

	// by carries the request where AsyncNode does not (fencing,
	// records); nil: AsyncNode.Start, or the node's blocking method (do).
	by nodeCall
	// late hears the answers that come after the decision, for an
	// extension, whose requests outlive its caller (restore.go:
	// lateAnswers); nil for every other fan.
	late *lateAnswers

	mu    sync.Mutex
	state fanState
	rs    []reply
	// got marks the nodes that answered before the fan was settled:
	// settle releases them at once.
	got               []bool
	yes, no, answered int
	replied           int // answers that are not errors: the quorum-th is the fan's sample (timeout.go)
	// How await ended: at the adaptive bound (timedOut), or with the
	// caller's context (canceled: its nodes are NoReply).
	timedOut, canceled bool
	// pending counts the requests and releases not answered yet; the
	// fan's share of Client.bg ends when it reaches 0 on a settled fan.
	pending int
	// The releases of a failed acquisition (fanReleasing): releasing of
	// them not answered yet, early of those of nodes that had answered
	// before settle; rctx bounds them (two node timeouts; a late one
	// past it gets a bound of its own: releaseNode), rcancel ends it at
	// the last answer.
	releasing, early int
	rctx             context.Context
	rcancel          context.CancelFunc
	// freed: a release deleted a key. gaveBack, when set before settle:
	// the call that made the fan ends on it. Once the last release is
	// answered, the client's waiting hears of it (waiting.gaveBack), and
	// that the keys were given back when freed and gaveBack are set.
	freed, gaveBack bool
	// keepLost, when set before settle: the attempt's value is the
	// caller's (WithValue), which another acquisition may hold, so a node
	// whose answer was lost is not released (releaseNode).
	keepLost bool

	// ready fires when the stop rule holds; allAnswered when every node
	// answered the request (a lock granted over blocking nodes waits for
	// it before its release: Lock.acq); released when every early release
	// is answered; quiet when every answer and every release is in.
	ready, allAnswered, released, quiet signal

	rsBuf  [7]reply // rs and got for up to 7 nodes, in the same allocation
	gotBuf [7]bool
	// confirmed has bit i set once node i confirmed the request, before
	// the decision or after it (granted); nodes past the 64th are not
	// tracked.
	confirmed uint64
}

// signal is a channel closed once, made only when someone waits for it.
// Its methods are called with the fan's mu held.
type signal struct {
	ch    chan struct{}
	fired bool
}

// fire closes the channel, if it was made, and marks s fired.
func (s *signal) fire() {
	if !s.fired {
		s.fired = true
		if s.ch != nil {
			close(s.ch)
		}
	}
}

// done returns the channel, closed once s fired.
func (s *signal) done() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
		if s.fired {
			close(s.ch)
		}
	}
	return s.ch
}

// waitFor waits until s fires or ctx ends, and reports whether s fired.
func (f *fan) waitFor(ctx context.Context, s *signal) bool {
	f.mu.Lock()
	if s.fired {
		f.mu.Unlock()
		return true
	}
	ch := s.done()
	f.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// answeredAll waits until every node answered the request, or ctx ends,
// and reports whether they all did. Each request is bounded by the fan's
// node timeout.
func (f *fan) answeredAll(ctx context.Context) bool { return f.waitFor(ctx, &f.allAnswered) }

// answeredNow reports whether every node has answered the request.
func (f *fan) answeredNow() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.allAnswered.fired
}

// newFan readies a fan of req over every node of c, with the caller's ctx
// and base, the context its requests derive from (ctx itself, or a context
// that outlives a cancelled caller, for releases). Its requests are bounded
// by the adaptive node timeout (timeout.go). It returns nil, and starts
// nothing, when the client is closed.
func (c *Client) newFan(ctx, base context.Context, req adapter.Request, stop stopRule) *fan {
	limit := timeoutLimit(c.opts.nodeTimeout, req.TTL)
	f := c.newFanWithin(ctx, base, req, stop, limit)
	if f == nil {
		return nil
	}
	// The requests live until the limit (or the patience, newFanWithin);
	// the wait ends at the adaptive bound, which await reads again when
	// it passes.
	f.adaptive, f.timeout, f.limit, f.ttl = true, c.nodeTimeout(req.TTL), limit, req.TTL
	return f
}

// newFanAfter is newFan for the second phase of the acquisition acq
// (fencing's raise), which grants acq's lock with acq's validity, counted
// from acq's T1: while a node is slow, it waits for it half the validity
// left at its start, so that the validity at the grant holds one more such
// wait: the lock's first extension lands (timeout.go).
func (c *Client) newFanAfter(acq *fan, req adapter.Request, stop stopRule) *fan {
	f := c.newFan(acq.ctx, acq.ctx, req, stop)
	if f == nil {
		return nil
	}
	f.ttl = acq.ttl
	ttl := acq.req.TTL
	left := acq.t1.Add(ttl - drift(ttl, c.opts.lock.driftFactor)).Sub(f.t1)
	c.patientFor(f, acq.ctx, left/2, acq.req)
	return f
}

// patientFor gives f, a grant's fan not sent yet, a patience of p for the
// slow nodes of grant (in place of newFanWithin's): its requests live
// until p while a node is slow for it, and no longer, else until its
// limit. A raise carries no ttl, so its limit is the node timeout's alone
// (twenty of them): at a short ttl, more than the half of the validity
// left that a slow node's answer may take (a fenced lock of ttl 1 s was
// granted with 188 ms of validity over nodes 400 ms late, and lost at its
// first extension). So while a node is known slow (it answered late, or
// is on probation; not merely never met, as every node of a new client
// is, whose raise under load keeps its limit) the raise waits no longer
// than p, and the slow nodes it timed out answer too late for the ttl
// (waited: AcquireError.Patience).
func (c *Client) patientFor(f *fan, base context.Context, p time.Duration, grant adapter.Request) {
	f.patient, f.waited = p > f.limit && c.anySlow(grant, f.born), 0
	if !f.patient {
		limit := f.limit
		if p < limit && c.knownSlow(f.born) {
			limit = max(p, 0)
			f.waited = limit
		}
		f.rc.init(base, f.t1, limit)
		return
	}
	f.waited = p
	f.rc.init(base, f.t1, p)
	c.cutAtClose(f, f.limit)
}

// nodeTimeout is the bound of the next fan's requests, of ttl (0: none):
// the node timeout adapted to the round trips seen (timeout.go, R8.2).
func (c *Client) nodeTimeout(ttl time.Duration) time.Duration {
	return c.rtt.timeout(c.opts.nodeTimeout, timeoutLimit(c.opts.nodeTimeout, ttl))
}

// newFanWithin is newFan with requests bounded by timeout instead of the
// node timeout: releases get the longer release timeout. While a node is
// slow, a fan whose request has a patience longer than timeout
// (timeout.go: a grant, an extension, a release of a lock of a ttl) has
// its requests live until the patience.
func (c *Client) newFanWithin(ctx, base context.Context, req adapter.Request, stop stopRule, timeout time.Duration) *fan {
	n := len(c.nodes)
	if !c.bgAdd(1) {
		return nil
	}
	f := &fan{c: c, req: req, stop: stop, ctx: ctx, timeout: timeout, pending: n}
	f.rs, f.got = f.rsBuf[:0], f.gotBuf[:0]
	if n > len(f.rsBuf) {
		f.rs, f.got = make([]reply, 0, n), make([]bool, 0, n)
	}
	f.rs, f.got = f.rs[:n], f.got[:n]
	for i := range f.rs {
		f.rs[i] = reply{i: i, none: true}
	}
	f.t1 = time.Now() // R8.1: before the first request
	f.born = f.t1.Sub(c.born)
	f.rc.init(base, f.t1, timeout)
	p, unmet := c.slowWait(req, f.born)
	if f.unmet = unmet; p > timeout {
		// A node is slow: the requests live until the patience, and
		// the wait goes on for the slow node (timeout.go); Close gives
		// up the patience for nodes the client never met, not the
		// requests' own bound.
		f.patient, f.waited = true, p
		f.rc.init(base, f.t1, p)
		c.cutAtClose(f, timeout)
	}
	f.nctx = &f.rc
	return f
}

// cutAtClose has Close cut the requests of the patient fan f, not sent
// yet, back to keep from its start, their own bound (what they live when
// no node is slow), when it is patient only for nodes the client never
// met (none is known slow): one of them may be frozen since the client's
// start, and Close, which waits for every request, would wait the whole
// patience for it; while a request within its own bound lives on, as a
// long-lived client's does, and a node that answers in that time is not
// left holding what it was asked to release. A new client's release (dlm
// release HANDLE) waits so for its third node past the quorum.
func (c *Client) cutAtClose(f *fan, keep time.Duration) {
	if !f.unmet || c.knownSlow(f.born) {
		return
	}
	c.cutBackAtClose(f, keep)
}

// cutBackAtClose registers f, not sent yet, with the client: Close cuts
// its requests back to keep from its start (0: ends them at once), or, if
// Close began already (a settler's fan), they get that bound now. The
// fan's end (done) forgets it. Only such a fan pays for it (a patient fan
// of a new client; an extension, whose requests outlive its caller): the
// others never take the client's mu here.
func (c *Client) cutBackAtClose(f *fan, keep time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.cut {
		f.keep = min(f.keep, keep)
		return
	}
	if c.closed {
		f.rc.d = min(f.rc.d, keep)
		return
	}
	if c.cuts == nil {
		c.cuts = make(map[*fan]struct{})
	}
	c.cuts[f] = struct{}{}
	f.cut, f.keep = true, keep
}

// cutBack ends the requests of the fans that cutBackAtClose registered, for
// Close: each at keep from its start, at once where that has passed. It
// returns the timers of the others, for Close to stop once it waited.
func (c *Client) cutBack(fans []*fan, keeps []time.Duration) []*time.Timer {
	var timers []*time.Timer
	now := time.Now()
	for i, f := range fans {
		if left := keeps[i] - now.Sub(f.t1); left > 0 {
			timers = append(timers, time.AfterFunc(left, f.cancel))
			continue
		}
		f.cancel()
	}
	return timers
}

// done ends the fan's share of Client.bg, once it finished (finishing).
func (f *fan) done() {
	c := f.c
	if f.cut {
		c.mu.Lock()
		delete(c.cuts, f)
		c.mu.Unlock()
	}
	c.bg.Done()
}

// cancel ends the fan's requests (nctx): at the last answer, or when await
// timed them out.
func (f *fan) cancel() { f.rc.cancel() }

// async reports whether the fan's requests go through AsyncNode.Start.
func (f *fan) async() bool {
	return f.c.async != nil && f.by == nil && startable(f.req.Op)
}

// startable reports whether AsyncNode.Start carries op: every operation
// but adapter.RWNode's, which run by its blocking methods (rw.go: doRW).
func startable(op adapter.Op) bool { return !isRWOp(op) }

// isRWOp reports whether op is one of adapter.RWNode's operations, which
// run by its blocking methods (never AsyncNode.Start; rw.go).
func isRWOp(op adapter.Op) bool { return op >= 32 && op <= 47 }

// call is the fan's request on node i, for AsyncNode.Start.
func (f *fan) call(i int) adapter.Call {
	return adapter.Call{Ctx: f.nctx, Req: f.req, To: f, Tag: i}
}

// blocking runs the fan's request on node i by the blocking method.
func (f *fan) blocking(i int) (bool, error) {
	if f.by != nil {
		return f.by.call(f, i)
	}
	return do(f.nctx, f.c.nodes[i], f.req)
}

// send starts fans on every node, in order on each node: a node executes
// the request of fans[0] before that of fans[1] (AsyncNode's order, one
// batch where the node is a BatchNode; over blocking nodes, one goroutine
// per node runs them in turn). The hand-off sends a release and the next
// waiter's acquisition together this way.
func (c *Client) send(fans ...*fan) {
	async := true
	for _, f := range fans {
		async = async && f.async()
	}
	for i := range c.nodes {
		fans := fans
		if c.facts.out() {
			// A node the client refuses is counted as failed for the
			// requests that would grant on it (nodecheck.go).
			if fans = c.countOut(i, fans); len(fans) == 0 {
				continue
			}
		}
		switch {
		case async && len(fans) == 1:
			cl := fans[0].call(i)
			c.async[i].Start(cl.Ctx, cl.Req, cl.To, cl.Tag)
		case async:
			var buf [2]adapter.Call
			calls := buf[:0]
			for _, f := range fans {
				calls = append(calls, f.call(i))
			}
			if bn, ok := c.async[i].(adapter.BatchNode); ok {
				bn.StartAll(calls)
				continue
			}
			for _, cl := range calls {
				c.async[i].Start(cl.Ctx, cl.Req, cl.To, cl.Tag)
			}
		default:
			// A copy for the goroutine: fans itself stays on the
			// caller's stack (no allocation per send on the async path).
			fs := append([]*fan(nil), fans...)
			go func() {
				for _, f := range fs {
					ok, err := f.blocking(i)
					f.Receive(i, ok, err)
				}
			}()
		}
	}
}

// stopNow reports whether the stop rule holds; called with f.mu held.
func (f *fan) stopNow() bool {
	n := len(f.rs)
	switch f.stop {
	case stopAll:
		return f.answered == n
	case stopQuorum:
		return f.yes >= f.c.quorum || f.answered == n
	}
	return decide(n, f.c.quorum, f.yes, f.no) != undecided
}

// Receive takes node i's answer to the fan's request (adapter.Receiver).
func (f *fan) Receive(i int, ok bool, err error) {
	c := f.c
	n := len(f.rs)
	r := reply{i: i, ok: ok && err == nil, err: err, latency: time.Since(f.t1)}
	c.answered(i, err) // history (timeout.go)
	f.mu.Lock()
	f.answered++
	if r.ok && i < 64 {
		f.confirmed |= 1 << i
	}
	state := f.state
	late := state >= fanDecided
	// An extension's answer after its decision is kept for its restore;
	// one that came only because the request outlived its caller teaches
	// the timing nothing (restore.go: lateAnswers.keep).
	apart := late && f.late != nil && f.late.keep(f, i, r)
	if err == nil && !apart {
		c.heard[i].Store(max(1, int64(f.born+r.latency))) // time.Since(c.born), one clock read fewer; 0 is never (owner.go)
		if r.latency >= f.limit && f.adaptive && f.ttl > 0 {
			c.answeredLate(i, f.born+r.latency, f.ttl) // a slow node (timeout.go)
		}
		f.replied++
		if f.replied == c.quorum {
			// The answer a decision waits for, late or not (timeout.go).
			c.rtt.sample(r.latency)
		}
	}
	if (!state.settled() || state == fanRecording) && !(late && (f.timedOut || f.canceled) && err != nil && isContextErr(err)) {
		// (A request that await cancelled at the bound stays timed out;
		// one the caller's context ended stays NoReply.)
		f.rs[i] = r
	}
	if !state.settled() {
		// Answered before the rule for late answers was set: settle
		// treats it as it treats the answers before the decision.
		f.got[i] = true
	}
	if !late {
		if r.ok {
			f.yes++
		} else {
			f.no++
		}
		if state == fanOpen && f.stopNow() {
			f.state = fanReady
			f.ready.fire()
		}
	}
	last := f.answered == n
	if last {
		f.allAnswered.fire()
	}
	// A settled fan that releases sends this node's release now, which
	// takes over the request's place in pending.
	release := state == fanReleasing || state == fanRecording
	finished := false
	if !release {
		f.pending--
		finished = f.finishing()
	}
	f.mu.Unlock()
	if late && err != nil {
		c.lateTimeout(f, i, err) // a node never met (timeout.go)
	}
	if last {
		f.cancel()
	}
	if release {
		f.releaseNode(i, false, f.keeps(r))
	}
	if finished {
		f.done()
	}
}

// finishing reports whether the fan just ended its share of Client.bg: it
// is settled and nothing it sent awaits an answer. Called with f.mu held,
// at most once with pending at 0 on a settled fan, after a decrement or by
// settle.
func (f *fan) finishing() bool {
	if f.state.settled() && f.pending == 0 {
		f.quiet.fire()
		return true
	}
	return false
}

// earlyRelease and lateRelease receive the answers to the releases of a
// failed acquisition (releaseNode): of a node that answered the request
// before the fan was settled (early), or after (late).
type (
	earlyRelease fan
	lateRelease  fan
)

// Receive takes node i's answer to its early release (adapter.Receiver).
func (r *earlyRelease) Receive(i int, ok bool, err error) {
	(*fan)(r).releaseAnswered(i, true, ok, err)
}

// Receive takes node i's answer to its late release (adapter.Receiver).
func (r *lateRelease) Receive(i int, ok bool, err error) {
	(*fan)(r).releaseAnswered(i, false, ok, err)
}

// releaseAnswered takes node i's answer to a release of a failed
// acquisition.
func (f *fan) releaseAnswered(i int, early, ok bool, err error) {
	c := f.c
	f.mu.Lock()
	f.releasing--
	last := f.releasing == 0
	f.freed = f.freed || (ok && err == nil)
	ended := f.freed && last && f.gaveBack
	if early {
		if f.early--; f.early == 0 {
			f.released.fire()
		}
	}
	f.pending--
	finished := f.finishing()
	f.mu.Unlock()
	if last {
		f.rcancel()
	}
	if ok && err == nil {
		c.waits.freedOn(f.req.Key, f.req.Keys, f.req.Value, i)
	}
	if last {
		c.waits.gaveBack(f.req.Key, f.req.Keys, f.req.Value, ended)
	}
	if finished {
		f.done()
	}
}

// await waits for the stop rule or the node timeout (R8.2), whichever is
// first, and returns the decision and the moment of the deciding answer
// (T2). From then on, answers are late. A node that has not answered is
// NoReply when the stop rule held first, TimedOut when the node timeout
// did; NoReply too when the caller's context ended the wait (then an answer
// that only reports the cancelled context is NoReply as well: a cancelled
// acquisition is not a failed node).
func (f *fan) await() (decision, time.Time) {
	timedOut := false
	f.mu.Lock()
	var ready <-chan struct{}
	if !f.ready.fired { // else decided already: no timer
		ready = f.ready.done()
	}
	f.mu.Unlock()
	if ready != nil {
		timedOut = f.wait(ready)
	}
	// From now on no timer watches the requests' deadline: nctx's Err
	// reads the clock (reqCtx).
	f.rc.unwatched.Store(true)
	if timedOut {
		// The requests still waiting are answered at once.
		defer f.cancel()
	}
	t2 := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	wasReady := f.state == fanReady
	f.state, f.timedOut = fanDecided, timedOut
	canceled := f.ctx.Err() != nil || pastDeadline(f.ctx, t2)
	f.canceled = canceled
	expired := timedOut || f.nctx.Err() != nil
	if !canceled && f.replied < f.c.quorum && (timedOut || errors.Is(f.nctx.Err(), context.DeadlineExceeded)) {
		// The time ran out before a quorum of nodes answered (whether
		// the adapters' answers at the deadline came first or not): the
		// fans after this one wait longer (timeout.go).
		f.c.rtt.expired()
	}
	for i, r := range f.rs {
		switch {
		case canceled && (r.none || r.err != nil && isContextErr(r.err)):
			f.rs[i] = reply{i: i, none: true}
		case r.none && (!wasReady || expired):
			// The node timeout passed first (R8.2).
			f.rs[i] = reply{i: i, err: context.DeadlineExceeded, latency: t2.Sub(f.t1)}
			f.no++
		}
		if !canceled && f.adaptive && f.ttl > 0 && f.rs[i].err != nil && isTimeout(f.rs[i].err) {
			f.c.timedOut(f, i, f.born+t2.Sub(f.t1)) // slow, or failed (timeout.go)
		}
	}
	return decide(len(f.rs), f.c.quorum, f.yes, f.no), t2
}

// pastDeadline reports whether ctx's deadline is at or before now: an
// ended context, whether or not the timer that cancels it has run yet (on
// a busy machine it runs late, and the fan's own timer at the same
// deadline may fire first). The caller's deadline is then why the wait
// ended, not a node that timed out.
func pastDeadline(ctx context.Context, now time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && !now.Before(d)
}

// isContextErr reports whether err is a context's cancellation or deadline.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// settle is called once, after await. For a failed acquisition (release)
// it releases every node's key (R8.5, R11): at once on the nodes that have
// answered, as they answer on the others, and waits for the first; with
// waitAll (a final attempt) it also waits for every node to answer and be
// released, recording the late answers. Otherwise late answers are ignored.
// When the caller's context has ended, settle waits for nothing.
func (f *fan) settle(release, waitAll bool) {
	n := len(f.rs)
	// A caller whose context ended does not wait: the releases go on in
	// the background (counted in c.bg), and the nodes that had not
	// answered stay NoReply in its error.
	canceled := f.ctx.Err() != nil || pastDeadline(f.ctx, time.Now())
	waitAll = waitAll && !canceled
	f.mu.Lock()
	switch {
	case !release:
		f.state = fanIgnoring
	case waitAll:
		f.state = fanRecording
	default:
		f.state = fanReleasing
	}
	var answered []int
	var keep []bool
	var buf [7]int
	var rbuf [7]bool
	if release {
		answered, keep = buf[:0], rbuf[:0]
		f.rctx, f.rcancel = context.WithTimeout(context.WithoutCancel(f.ctx), 2*f.timeout)
		f.releasing = n // every node is released, now or as it answers
		for i, r := range f.rs {
			if f.got[i] {
				answered = append(answered, i)
				keep = append(keep, f.keeps(r))
			}
		}
		f.early = len(answered)
		f.pending += f.early // a release each; the others' requests are pending still
		if f.early == 0 {
			f.released.fire()
		}
	}
	finished := f.finishing()
	f.mu.Unlock()
	if finished {
		f.done()
	}
	if !release {
		return
	}
	for j, i := range answered {
		f.releaseNode(i, true, keep[j])
	}
	if canceled {
		return
	}
	// The waits end with the caller's context too: what is still owed
	// then goes on in the background, counted in c.bg.
	if !f.waitFor(f.ctx, &f.released) || !waitAll {
		return
	}
	f.waitFor(f.ctx, &f.quiet)
}

// waitCtx waits for wg, or for ctx's end, whichever comes first, and
// reports whether wg's count reached zero. Without a Done channel (a
// context that never ends) it is wg.Wait; else a goroutine waits for wg,
// and ends with it, bounded by what wg counts (requests with deadlines).
func waitCtx(ctx context.Context, wg *sync.WaitGroup) bool {
	done := ctx.Done()
	if done == nil {
		wg.Wait()
		return true
	}
	ch := make(chan struct{})
	go func() {
		wg.Wait()
		close(ch)
	}()
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}

// keeps reports whether node i, whose answer to the fan's request is r,
// keeps what it holds when the attempt fails (releaseNode): it refused the
// request, or its answer was lost and the value is the caller's. Called
// once the fan is settled.
func (f *fan) keeps(r reply) bool {
	return r.refused() || (f.keepLost && !r.ok)
}

// releaseNode releases the fan's key on node i (R5, R8.5), even where the
// attempt believes it did not set it: an answer lost to a timeout, or an
// error, may hide a key that was set. Its answer comes back to
// earlyRelease (a node that answered before settle) or lateRelease.
//
// A node that keeps what it holds (keep: fan.keeps) is not released, and
// its release counts as answered at once, having deleted nothing. A node
// that refused the request (no error, key held) set nothing for this
// attempt, and the key it holds is another acquisition's, which may hold
// the same value (a value of the caller's, WithValue, reused while its
// first holder works, as a job's re-run that repeats its job id does):
// releasing it there would free that holder's lock. For the same reason
// an attempt with a value of the caller's does not release a node whose
// answer was lost (a timeout, an error): the node may hold that holder's
// key, which a release by value cannot tell from the attempt's own. Such
// a node may keep the attempt's own key until its ttl ends, refusing the
// next attempts with that value there meanwhile: the price of never
// freeing a holder's lock. A key of an earlier attempt of the same call
// with a random value that a node holds late is that attempt's to
// release: it holds another value than this attempt's; an attempt with a
// value of the caller's waits for its releases before the next one.
func (f *fan) releaseNode(i int, early, keep bool) {
	c := f.c
	var to adapter.Receiver = (*lateRelease)(f)
	if early {
		to = (*earlyRelease)(f)
	}
	if keep {
		to.Receive(i, false, nil)
		return
	}
	req := undo(f.req)
	ctx := f.rctx
	if !early && ctx.Err() != nil {
		// A node that answered after the releases' bound had passed (a
		// slow node: timeout.go) is released all the same, within a bound
		// of its own from now, or its key would outlive the attempt by a
		// ttl and refuse the next attempts.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(f.ctx), 2*f.timeout)
		to = releaseDone{to, cancel}
	}
	if f.async() {
		c.async[i].Start(ctx, req, to, i)
		return
	}
	go func() {
		ok, err := do(ctx, c.nodes[i], req)
		to.Receive(i, ok, err)
	}()
}

// releaseDone is the receiver of a release with a bound of its own
// (releaseNode): it ends the bound's context once the release is answered.
type releaseDone struct {
	to     adapter.Receiver
	cancel context.CancelFunc
}

// Receive passes the answer on and ends the context (adapter.Receiver).
func (r releaseDone) Receive(i int, ok bool, err error) {
	r.cancel()
	r.to.Receive(i, ok, err)
}

// replies returns each node's reply, in node order; called after settle,
// when they no longer change: no answer is recorded after settle unless
// settle waited for every answer (keep), so the fan's own slice is
// returned, not a copy.
func (f *fan) replies() []reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.state.settled() {
		panic("redlock: fan.replies before settle")
	}
	return f.rs
}

// granted reports whether node i confirmed the fan's request by now (for
// an acquisition: set the key), in time for the decision or not. A node
// past the 64th counts as having confirmed it.
func (f *fan) granted(i int) bool {
	if i >= 64 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.confirmed&(1<<i) != 0
}

// results returns each node's outcome, in node order.
func (f *fan) results() []NodeResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.c.results(f.rs)
}

// results turns fan-out replies into node results.
func (c *Client) results(replies []reply) []NodeResult {
	out := make([]NodeResult, len(replies))
	for k, r := range replies {
		out[k] = NodeResult{Node: c.names[r.i], Outcome: r.outcome(), Err: r.err, Latency: r.latency}
	}
	return out
}

// asyncNodes returns nodes as AsyncNodes when every one of them is one, else
// nil: a client fans out asynchronously only when it can for every node.
func asyncNodes(nodes []Node) []adapter.AsyncNode {
	out := make([]adapter.AsyncNode, len(nodes))
	for i, n := range nodes {
		an, ok := n.(adapter.AsyncNode)
		if !ok {
			return nil
		}
		out[i] = an
	}
	return out
}

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
