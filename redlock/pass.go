package redlock

import (
	"context"
	"sync"
	"time"
)

// The local hand-over (pass): when a lock's holder unlocks while another
// Lock call of the same client waits for the same resource, and every node
// is a TransferNode, Unlock gives the lock to the waiter at once, without a
// round trip on either side. Each node is asked, in its queue order
// (AsyncNode), to turn the key from the holder's value into the waiter's in
// one atomic step (TransferNode.Transfer), so that the key is never free on
// a node and no other client can take it in between (R13).
//
// The waiter holds the lock from the moment it is handed over, within the
// validity it inherits: until the holder's Until (a quorum keeps the
// holder's key or the waiter's until then, R9, R13), and no later than its
// own keys are sure to live (T1 of the hand-over + its ttl - drift). Once a
// quorum confirmed the transfer, Until moves to T1 + ttl - drift as after
// an acquisition (R9). Until then the lock is as good as the holder's was;
// when the transfer fails on too many nodes, Until stays where it was and
// the lock runs out there (Done, Err), and its keys are released by its own
// Unlock (R12), never earlier: the waiter may still rely on them.
//
// A pass is refused, and Unlock releases on the nodes as usual, when:
// fencing is on (a token comes from the nodes, R18), the waiter bounds its
// tries (WithTries), less than half the waiter's validity (ttl - drift)
// remains, or the lock has already passed WithHandoffLimit times in a row
// within the client. At that limit the release is announced to every
// client's waiters alike (R10, R14): keeping a resource within one client
// must be bounded, like extending it (R17).

// DefaultHandoffLimit is the default of WithHandoffLimit.
const DefaultHandoffLimit = 16

// WithHandoffLimit bounds how many times in a row a lock goes from one of
// this client's Lock calls to the next one waiting for the same resource
// (hand-off, pass.go) before a release is announced to the waiters of every
// client alike: without a bound, a busy client could keep a resource from
// all others (R17). Default DefaultHandoffLimit; it must be at least 1.
func WithHandoffLimit(n int) Option {
	return clientOption(func(o *clientOptions) { o.handoffLimit = n })
}

// turn counts a hand-over of key within this client and reports true, or
// reports false when key reached the limit (WithHandoffLimit) and starts a
// new run: the release is then announced to every client (yield). Called
// with h.mu held.
func (h *handoff) turn(key string) bool {
	if h.runs[key] >= h.c.opts.handoffLimit {
		delete(h.runs, key)
		return false
	}
	h.runs[key]++
	return true
}

// pass hands l, which Unlock has just ended, to the longest-waiting Lock
// call of its key in this client, if there is one and the pass is allowed
// (see above). It reports whether it did; Unlock is then done.
func (h *handoff) pass(l *Lock) bool {
	c := h.c
	if !h.transfer || c.opts.fencing {
		return false
	}
	h.mu.Lock()
	q := h.queues[l.key]
	if h.closed || len(q) == 0 {
		h.mu.Unlock()
		return false // the usual Unlock: nobody waits here
	}
	w := q[0]
	o := w.opts
	d := drift(o.ttl, o.driftFactor)
	t1 := time.Now()                             // R8.1, before the first request
	until := minTime(l.Until(), t1.Add(o.ttl-d)) // l.mu under h.mu, as c.start takes it
	if len(w.ch) > 0 || o.tries != 0 || w.ctx.Err() != nil || until.Sub(t1) < (o.ttl-d)/2 || h.runs[l.key] >= c.opts.handoffLimit {
		h.mu.Unlock()
		return false
	}
	value, err := c.values.next()
	if err != nil || !c.bgAdd(len(c.async)) {
		h.mu.Unlock()
		return false
	}
	h.turn(l.key)
	nl := &Lock{
		client:   c,
		resource: w.resource,
		key:      l.key,
		value:    value,
		ttl:      o.ttl,
		drift:    d,
		until:    until,
		inflight: &c.idle,
	}
	t := &transferRun{lock: nl, t1: t1, n: len(c.async)}
	var ctx context.Context
	ctx, t.cancel = context.WithTimeout(context.Background(), c.opts.nodeTimeout)
	req := Request{Op: OpTransfer, Key: l.key, Value: value, TTL: o.ttl, From: l.value}
	// Sent before the waiter may run: its own Unlock or Extend must reach
	// each node after the transfer (AsyncNode keeps each node's order).
	for i, an := range c.async {
		an.Start(ctx, req, t, i)
	}
	c.start(nl, o)         // auto-extension, Done (life.go)
	w.ch <- wake{lock: nl} // room checked above; every sender holds h.mu
	h.mu.Unlock()
	if len(c.obs) > 0 {
		c.obs.Attempt(AttemptEvent{Resource: nl.resource, Outcome: AttemptAcquired, Validity: until.Sub(t1), Handed: true})
	}
	return true
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// transferRun collects the nodes' answers to one pass's transfers: at a
// quorum it moves the new lock's Until to T1 + ttl - drift (R9).
type transferRun struct {
	lock   *Lock
	t1     time.Time
	n      int
	cancel context.CancelFunc

	mu       sync.Mutex
	answered int
	oks      int
}

// Receive takes node tag's answer to the transfer.
func (t *transferRun) Receive(_ int, ok bool, err error) {
	l := t.lock
	c := l.client
	t.mu.Lock()
	t.answered++
	if ok && err == nil {
		t.oks++
		if t.oks == c.quorum && validity(l.ttl, time.Since(t.t1), l.drift) > 0 {
			l.mu.Lock()
			if u := t.t1.Add(l.ttl - l.drift); !l.released && u.After(l.until) {
				l.until = u
			}
			l.mu.Unlock()
		}
	}
	last := t.answered == t.n
	t.mu.Unlock()
	if last {
		t.cancel()
	}
	c.bg.Done()
}

// drop unlocks in the background a lock passed to a Lock call that had
// left (its context ended) before taking it: Unlock passes it on, or
// releases it (R12). When Close began before, with no settler running, the
// keys are left to expire.
func (c *Client) drop(l *Lock) {
	c.settle(false, func() { _ = l.Unlock(context.Background()) })
}
