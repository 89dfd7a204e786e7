package redlock

import (
	"context"
	"slices"
	"time"

	"dlm/redlock/adapter"
)

// What a release does for the client's waiters (handoff.go has the
// overview), in the order Unlock runs it: the hand-over of the lock to this
// client's longest waiter (handOver, first), else what the release tells
// the waiters (after it).

// The hand-over within a client: Unlock gives the lock to its client's
// longest waiter by acquiring on the waiter's behalf, or, with
// WithHandoffKeep, by keeping it as it is.

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

// What releases tell a client's waiters: a release announced by the nodes
// (notify), which also tells which clients released the key in which order
// (turns; a waiter's rank, wait.go: rank), this client's own Unlock
// (ownRelease, yielded), and the releases of a failed attempt (gaveBack).

// turns is what a client heard of the turns the clients took at one key.
type turns struct {
	// heard holds the values of the last releases recorded (heardNext
	// the oldest): every watched node announces each of them, and each
	// counts once, even when a node that lags announces it after a
	// faster node announced the next release.
	heard     [heardReleases]string
	heardNext int
	// order holds the tags (client.go: tagOf) of the clients whose releases of
	// the key were announced while this client waited, each once, the
	// client that released least recently first: every client hears the
	// same announcements, so every client ranks alike (rank).
	order []string
	// rested counts the keys whose queues emptied, up to this one's
	// (handoff.rests), while this key has none; 0 while it has.
	rested uint64
	// later is closed by the next release recorded (laterRelease).
	later chan struct{}
}

// heardReleases is how many of a key's latest releases a client knows
// the announcements of (turns.heard): an announcement from a node that
// lags more releases behind the fastest one counts again.
const heardReleases = 8

// restKeys is how many keys without waiters keep their turns (rest).
const restKeys = 256

// maxOrder bounds turns.order: a client never ranks its waiter behind
// more clients than that.
const maxOrder = 64

// record notes the announced release of value. The clients ahead of its
// client in the order were passed over (gone, or their attempts lost):
// they are forgotten, and one that still waits ranks first again, as a
// client just come does. A value no client of this package drew (WithValue)
// leaves the order as it is.
func (ts *turns) record(value string) {
	if ts.later != nil {
		close(ts.later)
		ts.later = nil
	}
	ts.heard[ts.heardNext] = value
	ts.heardNext = (ts.heardNext + 1) % len(ts.heard)
	tag := tagOf(value)
	if tag == "" {
		return
	}
	if i := slices.Index(ts.order, tag); i >= 0 {
		ts.order = append(ts.order[:0], ts.order[i+1:]...)
	}
	if len(ts.order) == maxOrder {
		ts.order = append(ts.order[:0], ts.order[1:]...)
	}
	ts.order = append(ts.order, tag)
}

// laterRelease returns a channel closed when the next release of the key
// is recorded: a waiter woken for a release waits out its rank of that
// release only until the next one (wait.go: rankWait). Nil for a
// key without turns: never closed.
func (ts *turns) laterRelease() <-chan struct{} {
	if ts == nil {
		return nil
	}
	if ts.later == nil {
		ts.later = make(chan struct{})
	}
	return ts.later
}

// seen reports whether the release of value was recorded already: its
// announcement by another node, or a late one (turns.heard).
func (ts *turns) seen(value string) bool {
	return slices.Contains(ts.heard[:], value)
}

// notify handles an announcement from a node: it records the release
// (rank) and wakes the longest-waiting waiter of key (one waiter per
// announcement, so that waiters do not split the votes, R10, and the
// oldest goes first), unless the release was this client's own and its
// waiter was already woken.
func (h *handoff) notify(from int, key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	ts := h.turns[key]
	if len(q) > 0 {
		if ts == nil {
			ts = &turns{}
			h.turns[key] = ts
		}
		if ts.seen(value) {
			// Every node announces a release: one wake-up is
			// enough, but for a waiter whose attempt since then
			// reached this node before the release (heard).
			h.heard(key, from)
			return
		}
		ts.record(value)
	}
	if _, own := h.own[value]; !own {
		if len(q) > 0 {
			h.give(q[0], wake{remote: true, slots: h.rank(ts), from: from})
		}
		h.wakeSets(key)
	}
	h.heard(key, from)
}

// ownRelease wakes the longest-waiting waiter of key after this client's
// Unlock released value, and remembers value so that its announcements from
// the nodes do not wake another waiter.
func (h *handoff) ownRelease(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bumpReleased(key)
	h.recordOwn(key, value)
	q := h.queues[key]
	if len(q) == 0 && len(h.sets[key]) == 0 {
		return
	}
	h.wakeSets(key)
	if len(q) == 0 {
		return
	}
	delete(h.own, h.ownRing[h.ownNext])
	h.ownRing[h.ownNext] = value
	h.ownNext = (h.ownNext + 1) % len(h.ownRing)
	h.own[value] = struct{}{}
	h.wake(q[0], false)
}

// yielded wakes the longest-waiting waiter of key after this client's
// Unlock released value, announced to every client's waiters at
// WithHandoffLimit, as the announcement would, unless the announcement
// came first.
func (h *handoff) yielded(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bumpReleased(key)
	if !h.recordOwn(key, value) {
		return
	}
	if q := h.queues[key]; len(q) > 0 {
		h.give(q[0], wake{remote: true, slots: h.rank(h.turns[key]), from: -1})
	}
}

// recordOwn records this client's release of value at key (rank), unless
// its announcement was recorded already, and reports whether it recorded
// it: the announcement comes back from the nodes to a client that waits
// for the key, but a client that released its last waiter's lock no
// longer listens. Called with h.mu held.
func (h *handoff) recordOwn(key, value string) bool {
	ts := h.turns[key]
	if ts == nil || ts.seen(value) {
		return false
	}
	ts.record(value)
	return true
}

// bumpReleased counts a release of key by this client. Called with h.mu
// held.
func (h *handoff) bumpReleased(key string) {
	h.released[keyHash(key)%uint32(len(h.released))].Add(1)
}

// gaveBack is told that the releases of a failed attempt with value are
// all answered (R8.5). A waiter whose last failed attempt it was, and whose
// look after subscribing found the key held by that attempt
// (wait.go: confirmed), is woken now that the key is given back.
// When the call that made the attempt ended on it (ended), and its
// releases deleted keys, it wakes the longest waiter of key, or of each of
// keys (a set), and the sets that wait for them: the keys were given back
// unannounced, and the waiters that failed because of them would sleep out
// R10's delay while the key is free. That counts as this client's release
// (releasedMark) for the calls that have not joined the queue yet.
func (h *handoff) gaveBack(key string, keys []string, value string, ended bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if keys == nil {
		keys = []string{key}
	}
	for _, key := range keys {
		for _, w := range h.queues[key] {
			h.freedOwn(key, w, value, false)
		}
		for _, w := range h.sets[key] {
			h.freedOwn(key, w, value, true)
		}
		if !ended {
			continue
		}
		h.bumpReleased(key)
		if q := h.queues[key]; len(q) > 0 {
			h.wake(q[0], false)
		}
		h.wakeSets(key)
	}
}

// freedOn is told that node i deleted a key that a failed attempt with
// value gave back (R8.5), unannounced. For this client's waiters that is
// node i's release of the key (heard), unless the attempt is the waiter's
// latest: a later attempt that node i refused may have met that key there
// (the waiter's own earlier attempt's, which node i granted after that
// attempt's decision, or another call's), and no announcement follows, so
// the waiter would sleep out R10's delay while the key is free. The
// give-back of a waiter's latest attempt frees nothing that attempt met:
// the node granted it, maybe after its decision (then counted as not
// granting it, NoReply), and waking the waiter would end R10's delay
// after its own split vote. So a waiter whose attempt is under way only
// notes the node's release (wakeIfCrossed, once the attempt failed); one
// that waits is woken in its client's rank when node i did not grant its
// latest attempt.
func (h *handoff) freedOn(key string, keys []string, value string, i int) {
	if i < 0 || i >= min(len(h.nodes), 64) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if keys == nil {
		keys = []string{key}
	}
	freed := func(key string, w *waiter, set bool) {
		switch {
		case value == w.trying, w.trying == "" && value == w.gave:
			// Its latest attempt's own key.
		case w.trying != "":
			w.noteHeard(len(h.nodes), i, time.Now())
		case w.deniedAt&(1<<i) != 0:
			h.wakeFrom(key, w, set, i)
		}
	}
	for _, key := range keys {
		if q := h.queues[key]; len(q) > 0 {
			freed(key, q[0], false)
		}
		for _, w := range h.sets[key] {
			freed(key, w, true)
		}
	}
}

// freedOwn marks that the keys of w's last failed attempt, if value is
// its, are given back, and wakes w when its look was waiting for that; set:
// w waits for a set. Called with h.mu held.
func (h *handoff) freedOwn(key string, w *waiter, value string, set bool) {
	if w.gave == "" || w.gave != value {
		return
	}
	w.gaveFreed = true
	if w.lookPending {
		w.lookPending = false
		h.wakeFrom(key, w, set, w.lookFrom)
	}
}

// wakeSets wakes every waiting set that has key, after a release of key:
// each retries at once, as the first rank does (wait.go: wait; a jitter
// only after a split vote, R10).
// Called with h.mu held.
func (h *handoff) wakeSets(key string) {
	for _, w := range h.sets[key] {
		h.wake(w, true)
	}
}

// noteHeard notes that node i (of n) released the key at now (heardWhen).
// Called with handoff.mu held.
func (w *waiter) noteHeard(n, i int, now time.Time) {
	if w.heardWhen == nil {
		w.heardWhen = make([]time.Time, min(n, 64))
	}
	w.heardWhen[i] = now
}

// heard notes that node from announced a release of key, for the waiters
// that may attempt now: the front of key's queue and the sets that wait
// for key. One whose last failed attempt that node did not grant is woken
// again, whether or not the release was heard from another node
// first: its attempt, woken by the first announcement, went while the
// release was still on its way to this node, and no other wake-up would
// come before its timed retry (R10). A waiter is woken again at most once
// per failed attempt (a wake-up clears deniedAt: give), so that it does not
// attempt once per node in a herd. The time is noted (heardWhen) for a waiter still attempting:
// its attempt that the node did not grant may have crossed this release
// (wait.go: wakeIfCrossed). Called with h.mu held.
func (h *handoff) heard(key string, from int) {
	if from < 0 || from >= min(len(h.nodes), 64) {
		return
	}
	now := time.Now()
	bit := uint64(1) << from
	again := func(w *waiter, set bool) {
		w.noteHeard(len(h.nodes), from, now)
		if w.deniedAt&bit != 0 {
			h.wakeFrom(key, w, set, from)
		}
	}
	if q := h.queues[key]; len(q) > 0 {
		again(q[0], false)
	}
	for _, w := range h.sets[key] {
		again(w, true)
	}
}
