package redlock

import (
	"context"
	"time"

	"dlm/redlock/adapter"
)

// One acquisition (R8), the same for every kind of lock: the attempt sends
// what the target's shape asks of each node, the quorum rule and the
// validity decide (quorum.go), a second phase may confirm (fencing), and
// the lock is granted (lock.go: newLock) or every node's key released.

// target is what one acquisition locks: one resource, or a set, and the
// shape of its requests.
type target struct {
	// resource names the target in errors and events: the resource, or
	// the set's names in order, joined by ",".
	resource string
	key      string   // the lock key of one resource; "" for a set
	names    []string // a set's resource names, sorted; nil for one resource
	keys     []string // their lock keys, in the same order
	// waiter is the id of the waiting mark a writer leaves on the nodes
	// while it retries (rw.go); "" for none.
	waiter string
	shape  shape
}

// shape is what an attempt on a target asks of each node (R3): SET NX PX
// of one key (lock.go: exclusive), of every key of a set at once
// (multi.go), a reader's or a writer's step (rw.go), each in its fenced
// form on a client with fencing (fencing.go).
type shape interface {
	// ask returns the request of an attempt on t with value, and the
	// nodeCall that carries it where AsyncNode does not (nil: the
	// request goes as it is).
	ask(c *Client, t target, value string, o lockOptions) (adapter.Request, nodeCall)
}

// confirmer is a nodeCall whose acquisition a second phase must confirm
// before the grant, within the same validity: fencing's phase 2 (R18,
// fencing.go).
type confirmer interface {
	// confirm runs once the acquisition acq reached a quorum within its
	// validity; phase1 is each node's outcome, in node order.
	confirm(acq *fan, resource string, phase1 []NodeResult) confirmation
}

// confirmation is what a second phase found. Its zero value is "none".
type confirmation struct {
	token  uint64       // the fencing token
	nodes  []NodeResult // each node's outcome (Acquired: confirmed)
	at     time.Time    // the deciding reply
	failed bool         // too few nodes confirmed, or err
	err    error        // what stopped the phase before it started
}

// attempt is one acquisition (R8): send what t's shape asks to all nodes at
// once (R15), decide as soon as a quorum acquired or can no longer acquire,
// compute the validity (R9), confirm (fencing's phase 2, R18), and on
// failure release on every node, including those that answer after the
// decision (R8.5, R11).
//
// When final is set (TryLock, the last of WithTries), a failed attempt also
// waits for the nodes it did not wait for to answer or time out, and for
// their releases: the error then reports every node's outcome, so that
// "held elsewhere" and "no quorum" are told apart exactly, and no key of the
// attempt outlives the call. The decision itself never waits for them, and
// no wait goes past ctx's end: the releases still owed
// then go on in the background, and Client.Close waits for them. An
// attempt with a value of the caller's (WithValue) waits as a final one
// does (decideAcquire), so that no release of it lands after the next
// attempt set the same value (R8.5). An attempt that a closed client sent
// to no node fails with ErrClosed and no node's outcome.
func (c *Client) attempt(ctx context.Context, t target, value string, o lockOptions, final bool) (*Lock, *AcquireError) {
	req, by := t.shape.ask(c, t, value, o)
	f := c.newFan(ctx, ctx, req, stopDecided)
	if f == nil {
		return nil, &AcquireError{Resource: t.resource, Quorum: c.quorum, Cause: ErrClosed}
	}
	f.by = by
	c.send(f)
	return c.decideAcquire(f, t.resource, o, final, nil)
}

// decideAcquire decides the acquisition f, sent by attempt or by a
// hand-over (handoff_handover.go): the validity (R9), the confirmation
// (fencing's phase 2), the grant or the releases (R8.5). from is the lock
// this one was handed over from in this client, or nil: the new lock
// continues its chain (runs and extensions count on, WithHandoffLimit,
// R17).
func (c *Client) decideAcquire(f *fan, resource string, o lockOptions, final bool, from *Lock) (*Lock, *AcquireError) {
	state, t2 := f.await()
	d := drift(o.ttl, o.driftFactor)
	t1 := f.t1
	v := validity(o.ttl, t2.Sub(t1), d)
	var cf confirmation
	if p, ok := f.by.(confirmer); ok && state == reached && v > 0 {
		// Within the same validity (R18: phase 2, fencing.go).
		f.mu.Lock()
		results := c.results(f.rs)
		f.mu.Unlock()
		cf = p.confirm(f, resource, results)
		t2 = cf.at
		v = validity(o.ttl, t2.Sub(t1), d)
	}
	if state == reached && v > 0 && !cf.failed {
		f.settle(false, false)
		l := c.newLock(f, resource, o, d, cf.token, from) // lock.go
		if len(c.obs) > 0 {
			c.obs.Attempt(AttemptEvent{Resource: resource, Outcome: AttemptAcquired, Elapsed: t2.Sub(t1), Validity: v, Nodes: f.results(), Fence: cf.nodes, Token: cf.token, Handed: from != nil})
		}
		return l, nil
	}
	if from == nil && (final || f.ctx.Err() != nil || pastDeadline(f.ctx, time.Now()) || c.isClosed()) {
		// The Lock call ends here, and gives back unannounced the keys
		// it may have set (R8.5): the client's waiters that failed on
		// them are woken once the releases are done (waiting.gaveBack).
		f.gaveBack = true
	}
	f.settle(true, final || o.valueSet)
	e := &AcquireError{Resource: resource, Quorum: c.quorum, Nodes: f.results(), Fence: cf.nodes, Cause: cf.err}
	if state == reached && !cf.failed {
		e.Validity = v
	}
	if err := f.ctx.Err(); err != nil && e.Cause == nil {
		e.Cause = err
	} else if e.Cause == nil && pastDeadline(f.ctx, time.Now()) {
		e.Cause = context.DeadlineExceeded // its timer has not fired yet
	}
	if len(c.obs) > 0 {
		c.obs.Attempt(AttemptEvent{Resource: resource, Outcome: e.outcome(f.ctx), Elapsed: t2.Sub(t1), Validity: e.Validity, Nodes: e.Nodes, Fence: cf.nodes})
	}
	return nil, e
}
