package redlock

import (
	"context"
	"slices"
)

// The hand-off's queue: the waiters of each key, in FIFO order, the
// waiters of sets, and how a release wakes the next of them (handoff.go
// has the overview).

// waiter is one Lock call waiting to retry. ch holds at most one pending
// wake-up. head is closed when the waiter reaches the front of its queue.
// handing is set while this client's Unlock acquires on the waiter's
// behalf: no other wake-up is given to it then.
type waiter struct {
	ch      chan wake
	head    chan struct{}
	handing bool // under handoff.mu
	// split: its last attempt set some keys but missed the quorum (a
	// split vote, R10); under handoff.mu.
	split bool
	// gave is the value of its last failed attempt, whose keys are given
	// back (R8.5), maybe late; gaveFreed is set once they all are
	// (gaveBack); lookPending while the look after subscribing found the
	// key held by gave and waits for them (handoff_subs.go: confirmed).
	// Under handoff.mu.
	gave        string
	gaveFreed   bool
	lookPending bool
	// woke is the wake-up that the call's latest wait acted on; only the
	// waiting call reads and writes it (handoff_wait.go: next).
	woke wake

	// The waiting Lock call, for a hand-over on its behalf.
	ctx      context.Context
	resource string
	opts     lockOptions
}

// wake is one wake-up of a waiter: an announcement from the nodes (remote),
// this client's own Unlock, or a hand-over with the lock itself.
type wake struct {
	remote bool
	lock   *Lock
	// slots is, for an announcement, how many attempt durations the
	// waiter lets pass before its own (rank).
	slots int
	// from is the node whose announcement this is, or -1.
	from int
}

// isHead reports whether w is at the front of its queue.
func (w *waiter) isHead() bool {
	select {
	case <-w.head:
		return true
	default:
		return false
	}
}

// newWaiter returns a waiter for a Lock call of resource with options o
// and context ctx, in no queue yet.
func newWaiter(ctx context.Context, resource string, o lockOptions) *waiter {
	return &waiter{ch: make(chan wake, 1), head: make(chan struct{}), ctx: ctx, resource: resource, opts: o}
}

// join queues w for key, subscribing to key's releases on every node when
// it is the key's first waiter.
func (h *handoff) join(key string, w *waiter) {
	h.joinQueue(key, w, false)
}

// joinBehind queues w for key behind the key's waiters, and reports false,
// queueing nothing, when the key has none: looking at the queue and
// joining it are one step, so a release that empties the queue cannot fall
// between them and leave w asleep on R10's delay at the front of a queue
// nobody will wake while the key is free.
func (h *handoff) joinBehind(key string, w *waiter) bool {
	return h.joinQueue(key, w, true)
}

// joinQueue is join and joinBehind.
func (h *handoff) joinQueue(key string, w *waiter, behind bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if behind && len(q) == 0 {
		return false
	}
	h.queues[key] = append(q, w)
	if len(q) == 0 {
		if ts := h.turns[key]; ts != nil {
			ts.rested = 0
		}
		close(w.head)
		if len(h.sets[key]) == 0 {
			h.subscribe(key, true)
		}
	}
	return true
}

// leave removes w from key's queue; the last waiter unsubscribes. A wake-up
// w had not used is dropped (it is usually a late announcement of the
// release w itself acquired after), except a lock handed to w, which is
// unlocked (and so handed on). A waiter that leaves without the lock wakes
// the next one.
func (h *handoff) leave(key string, w *waiter, acquired bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var handed *Lock
	select {
	case wk := <-w.ch:
		handed = wk.lock
	default:
	}
	q := h.queues[key]
	for i, x := range q {
		if x == w {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if handed != nil {
		// Handed to w, which left first: unlocked in the background (it
		// takes h.mu), after w is out of the queue.
		h.c.drop(handed)
	}
	if len(q) == 0 {
		delete(h.queues, key)
		h.rest(key)
		if len(h.sets[key]) == 0 {
			h.subscribe(key, false)
		}
		return
	}
	h.queues[key] = q
	if !q[0].isHead() {
		close(q[0].head)
	}
	if !acquired && handed == nil && !w.handing {
		// w may have been woken and given up (its context ended): pass
		// the turn on, lest the next waiter sleep out its timed retry
		// while the lock is free. At worst one futile attempt.
		h.wake(q[0], false)
	}
}

// rest keeps the turns of key, whose queue just emptied, for when the
// client waits for it again; beyond restKeys such keys, the half that
// rested longest forget theirs. Called with h.mu held.
func (h *handoff) rest(key string) {
	ts := h.turns[key]
	if ts == nil {
		return
	}
	h.rests++
	ts.rested = h.rests
	if len(h.turns) <= len(h.queues)+restKeys {
		return
	}
	keep := h.rests - restKeys/2
	for k, t := range h.turns {
		if len(h.queues[k]) == 0 && t.rested <= keep {
			delete(h.turns, k)
		}
	}
}

// queued reports whether key has waiters in this client.
func (h *handoff) queued(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queues[key]) > 0
}

// keyHash is the 32-bit FNV-1a hash of key.
func keyHash(key string) uint32 {
	x := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		x ^= uint32(key[i])
		x *= 16777619
	}
	return x
}

// bumpReleased counts a release of key by this client. Called with h.mu
// held.
func (h *handoff) bumpReleased(key string) {
	h.released[keyHash(key)%uint32(len(h.released))].Add(1)
}

// releasedMark returns a mark of this client's releases of t's keys so far
// (0 without a hand-off). Lock takes it before each attempt: a release of
// the key by this client between the attempt and the waiter's joining the
// queue woke nobody (the queue was empty), and the waiter, once it joined,
// retries at once instead of sleeping out R10's delay while the key is
// free (wakeIfReleased). Keys that share a slot only cost an attempt.
func (h *handoff) releasedMark(t target) uint64 {
	if h == nil {
		return 0
	}
	if t.keys == nil { // one key: every Lock attempt takes this mark
		return h.released[keyHash(t.key)%uint32(len(h.released))].Load()
	}
	var m uint64
	for _, key := range t.keys {
		m += h.released[keyHash(key)%uint32(len(h.released))].Load()
	}
	return m
}

// wakeIfReleased wakes w, which just joined the queue of t's key (or its
// set's waiters), when this client released one of t's keys since mark.
func (h *handoff) wakeIfReleased(t target, w *waiter, mark uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.releasedMark(t) != mark {
		h.give(w, wake{})
	}
}

// gaveBack is told that the releases of a failed attempt with value are
// all answered (R8.5). A waiter whose last failed attempt it was, and whose
// look after subscribing found the key held by that attempt
// (handoff_subs.go: confirmed), is woken now that the key is given back.
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
		h.wakeLooked(key, w, set)
	}
}

// wakeLooked wakes w, which the look after subscribing found free to go
// (handoff_subs.go: confirmed): at once, or, when its last attempt split
// the votes, as an announcement would, in its client's rank and with a
// jitter (handoff_wait.go: wait), which keeps the next split away as R10's
// delay does; set: w waits for a set. Called with h.mu held.
func (h *handoff) wakeLooked(key string, w *waiter, set bool) {
	switch {
	case set:
		h.wake(w, true) // a set's waiter: with a jitter after a split (wait)
	case w.split:
		h.give(w, wake{remote: true, slots: h.rank(h.turns[key]), from: -1})
	default:
		h.wake(w, false)
	}
}

// wakeNext wakes the longest-waiting waiter of key other than self, as an
// announcement from the nodes would.
func (h *handoff) wakeNext(key string, self *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.queues[key] {
		if w != self {
			h.give(w, wake{remote: true, slots: h.rank(h.turns[key]), from: -1})
			return
		}
	}
}

// wake gives w a wake-up unless it has one or a hand-over to it is under
// way; called with h.mu held.
func (h *handoff) wake(w *waiter, remote bool) {
	h.give(w, wake{remote: remote, from: -1})
}

// give gives w the wake-up wk unless it has one or a hand-over to it is
// under way; called with h.mu held.
func (h *handoff) give(w *waiter, wk wake) {
	if w.handing {
		return
	}
	select {
	case w.ch <- wk:
	default:
	}
}

// The waiters of sets (LockAll): a set's waiter stands in no key's
// queue, and is woken by the release of any key of its set.

// joinTarget makes the waiter of a Lock or LockAll call after its first
// failed attempt: in its key's queue for one resource (join), or among the
// waiters of a set.
func (h *handoff) joinTarget(t target, w *waiter) {
	if t.keys == nil {
		h.join(t.key, w)
		return
	}
	// A set's waiter stands in no queue: it would hold up the waiters of
	// one of its keys while another key is held. It runs its timed retry
	// (R10) at once, as the front of a queue does, and is woken early by
	// the release of any of its keys; Unlock never hands a lock over to it
	// (handOver looks at the queues only), so a set is never handed one
	// key of its set.
	close(w.head)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, key := range t.keys {
		if len(h.queues[key]) == 0 && len(h.sets[key]) == 0 {
			h.subscribe(key, true)
		}
		h.sets[key] = append(h.sets[key], w)
	}
}

// leaveSet takes a set's waiter w out of the waiters of keys; the last
// waiter of a key unsubscribes from it.
func (h *handoff) leaveSet(keys []string, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, key := range keys {
		s := slices.DeleteFunc(h.sets[key], func(x *waiter) bool { return x == w })
		if len(s) > 0 {
			h.sets[key] = s
			continue
		}
		delete(h.sets, key)
		if len(h.queues[key]) == 0 {
			h.subscribe(key, false)
		}
	}
}

// wakeSets wakes every waiting set that has key, after a release of key:
// each retries at once, as the first rank does (handoff_wait.go: wait; a jitter
// only after a split vote, R10).
// Called with h.mu held.
func (h *handoff) wakeSets(key string) {
	for _, w := range h.sets[key] {
		h.wake(w, true)
	}
}
