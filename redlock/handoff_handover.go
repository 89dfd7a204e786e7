package redlock

import (
	"context"
	"time"

	"dlm/redlock/adapter"
)

// The hand-over within a client: Unlock gives the lock to its client's
// longest waiter by acquiring on the waiter's behalf, or, with
// WithHandoffKeep, by keeping it as it is (handoff.go has the overview).

// handResult is what handOver did with a lock that Unlock ends.
type handResult int

const (
	handNone  handResult = iota // nobody to hand to: release as usual
	handYield                   // the limit is reached: announce to all
	handDone                    // handed over (or tried to): released
)

// handOver is Unlock's hand-off of l to this client's longest waiter for
// its key. When the waiter retries without a bound (WithTries 0), without
// fencing, and l's chain of hand-overs is below the limit, Unlock acquires
// on the waiter's behalf, right behind (or, over TransferNodes, as) the
// release of l, and gives the waiter the lock once a quorum holds it; when
// that acquisition fails, the waiter is woken to retry. It returns handDone
// and Unlock's error then; handYield at the limit; otherwise handNone.
func (h *handoff) handOver(l *Lock) (handResult, error) {
	if h == nil || l.keys != nil {
		return handNone, nil // a set is released, never handed over (multi.go)
	}
	c := h.c
	h.mu.Lock()
	q := h.queues[l.key]
	switch {
	case h.closed || len(q) == 0:
		h.mu.Unlock()
		return handNone, nil
	case l.run >= c.opts.handoffLimit:
		h.mu.Unlock()
		return handYield, nil
	}
	w := q[0]
	if w.handing || w.opts.tries != 0 || c.opts.fencing || w.opts.valueSet || w.ctx.Err() != nil {
		h.mu.Unlock()
		return handNone, nil // released as usual, then w is woken
	}
	if nl := c.keep(l, w.opts); nl != nil {
		w.handing = true
		h.mu.Unlock()
		// Never under h.mu: an observer may be slow, and a grant on a
		// client that Close just began ends the lock at once (ErrClosed),
		// which the observers hear of.
		c.grant(nl, w.opts) // auto-extension, Done (life.go)
		if len(c.obs) > 0 {
			c.obs.Attempt(AttemptEvent{Resource: nl.resource, Outcome: AttemptAcquired, Validity: nl.Validity(), Handed: true})
		}
		h.deliver(l.key, w, nl)
		return handDone, nil
	}
	value, err := c.values.next()
	if err != nil {
		h.mu.Unlock()
		return handNone, nil
	}
	w.handing = true
	h.mu.Unlock()

	o, bg := w.opts, context.Background()
	var rel, acq *fan
	if h.transfer {
		acq = c.newFan(bg, bg, adapter.Request{Op: adapter.OpTransfer, Key: l.key, Value: value, TTL: o.ttl, From: l.value}, stopDecided)
	} else {
		rel = c.newFanWithin(bg, bg, adapter.Request{Op: adapter.OpRelease, Key: l.key, Value: l.value}, stopQuorum, c.opts.releaseTimeout)
		if rel != nil {
			acq = c.newFan(bg, bg, adapter.Request{Op: adapter.OpAcquire, Key: l.key, Value: value, TTL: o.ttl}, stopDecided)
		}
	}
	if acq == nil { // closed
		var err error
		if rel != nil {
			c.send(rel)
			err = c.released(rel)
		}
		h.deliver(l.key, w, nil)
		if rel == nil {
			return handNone, nil
		}
		return handDone, err
	}
	if rel != nil {
		c.send(rel, acq)
	} else {
		c.send(acq)
	}
	nl, aerr := c.decideAcquire(acq, w.resource, o, false, l)
	switch {
	case rel != nil:
		err = c.released(rel)
	case aerr != nil:
		// The transfer reached no quorum, and the keys it moved are
		// released (decideAcquire): release what is left of l.
		moved := acq.replies()
		rs := c.releaseAll(context.Background(), l.request(adapter.OpRelease), true)
		for i := range rs {
			if moved[i].ok {
				rs[i] = moved[i]
			}
		}
		err = c.unlockErr(rs)
	}
	h.deliver(l.key, w, nl)
	return handDone, err
}

// keepShare is the share of a waiter's validity (ttl - drift) that a lock
// must still have for a hand-over to keep it (keep).
const keepNum, keepDen = 7, 8

// keep returns the lock that takes over l, which Unlock is ending, for a
// waiter of this client with options o without asking any node, when the
// client keeps locks at hand-overs (WithHandoffKeep): the keys hold l's
// value on a quorum until l's Until (R9, R13), and this client decides
// which of its own Lock calls relies on them, so the waiter continues l
// (same value, same Until, the chain's runs and extensions, R17) at no
// round trip. It returns nil, and the hand-over acquires anew (transfer,
// or release and SET NX), unless l is one exclusive lock of this client's
// own random value (bound is not nil only then) whose handle was not
// written (Handle: the handle's holder must not reach the next holder,
// R18) nor a record bound to it (PutRecord: the record names its holder),
// that no extension found gone from too many nodes (R13: its keys may be
// free), without fencing (every holder gets a new token), with the
// waiter's ttl and drift, and with at least keepNum/keepDen of the
// waiter's validity left, on a client that is not closed. Called with h.mu
// held: the caller grants the lock (life.go: grant) and reports it to the
// observers once h.mu is unlocked.
func (c *Client) keep(l *Lock, o lockOptions) *Lock {
	if l.bound == nil || l.bound.Load() || l.mode != modeExclusive || l.keys != nil || c.opts.fencing || o.ttl != l.ttl || drift(o.ttl, o.driftFactor) != l.drift {
		return nil
	}
	if c.isClosed() {
		// A closed client grants nothing, a kept lock included: the
		// hand-over's fan-out is refused, and Unlock says ErrClosed.
		return nil
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	until, ext := l.until, l.extensions
	// bound again under l.mu, where Handle sets it: from here on Value
	// and Handle show no value (passed).
	if l.gone || l.bound.Load() || until.Sub(now) < (o.ttl-l.drift)/keepDen*keepNum {
		return nil
	}
	l.passed = true
	return &Lock{
		client:     c,
		resource:   l.resource,
		key:        l.key,
		value:      l.value,
		ttl:        l.ttl,
		drift:      l.drift,
		until:      until,
		acq:        l.acq,
		run:        l.run + 1,
		mode:       modeExclusive,
		bound:      l.bound,
		extensions: ext,
	}
}

// deliver ends a hand-over to w: w gets the lock nl, or a wake-up to retry
// at once when nl is nil. When w has left its queue meanwhile, nl is
// unlocked in the background (and so handed on), or the next waiter woken.
func (h *handoff) deliver(key string, w *waiter, nl *Lock) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.handing = false
	for _, x := range h.queues[key] {
		if x != w {
			continue
		}
		select {
		case <-w.ch: // a wake-up without a lock is worth less
		default:
		}
		w.ch <- wake{lock: nl}
		return
	}
	switch q := h.queues[key]; {
	case nl != nil:
		h.c.drop(nl)
	case len(q) > 0:
		h.wake(q[0], false)
	}
}
