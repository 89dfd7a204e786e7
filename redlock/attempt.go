package redlock

import (
	"context"
	"sync/atomic"
	"time"
)

// attempt is one acquisition (R8): send SET NX PX to all nodes at once
// (R15), decide as soon as a quorum acquired or can no longer acquire, compute
// the validity (R9), run fencing's phase 2 (R18), and on failure release on
// every node, including those that answer after the decision (R8.5, R11).
//
// When final is set (TryLock, the last of WithTries), a failed attempt also
// waits for the nodes it did not wait for to answer or time out, and for
// their releases: the error then reports every node's outcome, so that
// "held elsewhere" and "no quorum" are told apart exactly, and no key of the
// attempt outlives the call. The decision itself never waits for them, and
// no wait goes past ctx's end (issue 22 item 4): the releases still owed
// then go on in the background, and Client.Close waits for them. An
// attempt with a value of the caller's (WithValue) waits as a final one
// does (decideAcquire), so that no release of it lands after the next
// attempt set the same value (R8.5).
func (c *Client) attempt(ctx context.Context, t target, value string, o lockOptions, final bool) (*Lock, *AcquireError) {
	resource := t.resource
	req := t.acquireRequest(value, o.ttl, c.opts.fencing) // multi.go
	f := c.newFan(ctx, ctx, req, stopDecided)
	if f == nil {
		return nil, &AcquireError{Resource: resource, Quorum: c.quorum, Cause: ErrClosed}
	}
	if c.opts.fencing {
		if f.fenceKeys = t.fenceKeys(&c.opts); f.fenceKeys == nil {
			f.fenceKey = c.opts.keyOf(c.opts.fencePrefix, resource)
		}
		f.fences = make([]uint64, len(c.nodes))
		f.lost = make([]bool, len(c.nodes))
	}
	c.send(f)
	return c.decideAcquire(f, resource, o, final, nil)
}

// decideAcquire decides the acquisition f, sent by attempt or by a
// hand-over (handoff.go): the validity (R9), fencing's phase 2, the grant or
// the releases (R8.5). from is the lock this one was handed over from in
// this client, or nil: the new lock continues its chain (runs and
// extensions count on, WithHandoffLimit, R17).
func (c *Client) decideAcquire(f *fan, resource string, o lockOptions, final bool, from *Lock) (*Lock, *AcquireError) {
	state, t2 := f.await()
	d := drift(o.ttl, o.driftFactor)
	t1 := f.t1
	v := validity(o.ttl, t2.Sub(t1), d)
	var fz fenceResult
	if state == reached && v > 0 && f.fences != nil {
		// R18: phase 2, within the same validity (fencing.go).
		f.mu.Lock()
		results := c.results(f.rs)
		f.mu.Unlock()
		fz = c.fence(f.ctx, resource, f, results)
		t2 = fz.at
		v = validity(o.ttl, t2.Sub(t1), d)
	}
	if state == reached && v > 0 && !fz.failed {
		f.settle(false, false)
		l := &Lock{
			client:   c,
			resource: resource,
			key:      f.req.Key,
			keys:     f.req.Keys,
			value:    f.req.Value,
			ttl:      o.ttl,
			drift:    d,
			until:    t1.Add(o.ttl - d),
			inflight: &f.inflight,
			token:    fz.token,
			mode:     modeOf(f.req.Op), // rw.go
		}
		if from != nil {
			l.run = from.run + 1
			l.extensions = from.extensionsDone()
		}
		if l.mode == modeExclusive && l.keys == nil && fz.token == 0 && !c.opts.fencing && !o.valueSet {
			l.shown = new(atomic.Bool) // may be kept by a hand-over (handoff.go)
		}
		c.grant(l, o) // auto-extension, Done (life.go)
		if len(c.obs) > 0 {
			c.obs.Attempt(AttemptEvent{Resource: resource, Outcome: AttemptAcquired, Elapsed: t2.Sub(t1), Validity: v, Nodes: f.results(), Fence: fz.nodes, Token: fz.token, Handed: from != nil})
		}
		return l, nil
	}
	if from == nil && c.hand != nil && (final || f.ctx.Err() != nil || pastDeadline(f.ctx, time.Now()) || c.isClosed()) {
		// The Lock call ends here, and gives back unannounced the keys
		// it may have set (R8.5): the client's waiters that failed on
		// them are woken once the releases are done (handoff_queue.go).
		keys, key := f.req.Keys, f.req.Key
		f.gaveBack = func() { c.hand.gaveBack(key, keys) }
	}
	f.settle(true, final || o.valueSet)
	e := &AcquireError{Resource: resource, Quorum: c.quorum, Nodes: f.results(), Fence: fz.nodes, Cause: fz.err}
	if state == reached && !fz.failed {
		e.Validity = v
	}
	if err := f.ctx.Err(); err != nil && e.Cause == nil {
		e.Cause = err
	} else if e.Cause == nil && pastDeadline(f.ctx, time.Now()) {
		e.Cause = context.DeadlineExceeded // its timer has not fired yet
	}
	if len(c.obs) > 0 {
		c.obs.Attempt(AttemptEvent{Resource: resource, Outcome: e.outcome(f.ctx), Elapsed: t2.Sub(t1), Validity: e.Validity, Nodes: e.Nodes, Fence: fz.nodes})
	}
	return nil, e
}
