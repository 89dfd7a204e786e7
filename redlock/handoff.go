package redlock

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
)

// The hand-off (R10, R14). A Lock call that failed an attempt waits in a
// FIFO queue per key, and only the front waiter runs the timed random retry
// (R10). It is woken early by a release: announced by the nodes
// (HandoffNode: any client's Unlock), or by this client's own Unlock, which
// hands the lock over to its longest waiter directly (handOver): the
// waiter's acquisition is sent right behind the release on every node (one
// round trip, one batch where the node is a BatchNode), or, when every node
// is a TransferNode, as one atomic step per node that turns the key from the
// holder's value into the waiter's, so that the key is never free. Either
// way the waiter gets a lock only once a quorum holds its value within its
// validity (R8.3, R9), exactly as after its own attempt: a hand-over is an
// acquisition made by Unlock on the waiter's behalf.
//
// Hand-overs within one client are bounded: after WithHandoffLimit of them
// in a row the release is announced to every client's waiters alike, and a
// lock handed over keeps counting the extensions of the locks before it, so
// that a busy client cannot keep a resource from all others (R17).

// DefaultHandoffLimit is the default of WithHandoffLimit.
const DefaultHandoffLimit = 16

// WithHandoffLimit bounds how many times in a row a lock goes from one of
// this client's Lock calls to the next one waiting for the same resource
// before a release is announced to the waiters of every client alike:
// without a bound, a busy client could keep a resource from all others
// (R17). The count follows the lock from holder to holder, however the
// holders come and go. Default DefaultHandoffLimit; at least 1.
func WithHandoffLimit(n int) Option {
	return clientOption(func(o *clientOptions) { o.handoffLimit = n })
}

// WithHandoff turns the hand-off without polling on or off (R10, R14): when
// on and the nodes implement adapter.HandoffNode, Unlock announces each
// release, a waiting Lock retries on the announcement (at once, or in turn
// behind the clients that waited longer), and Unlock hands the lock over to
// this client's own waiters; the timed random retry stays as a fallback.
// Default on.
func WithHandoff(on bool) Option {
	return clientOption(func(o *clientOptions) { o.noHandoff = !on })
}

// handoffSubscribeTimeout bounds one SUBSCRIBE or UNSUBSCRIBE of the
// hand-off, which runs in the background.
const handoffSubscribeTimeout = time.Second

// handoff is a client's side of the hand-off: the queues of waiters per
// key, and the per-node subscriptions, opened on first use.
type handoff struct {
	c     *Client
	nodes []adapter.HandoffNode // nil where a node lacks the capability
	// transfer: every node is a TransferNode: hand-overs turn the key
	// from one value to the next in one step.
	transfer bool

	mu      sync.Mutex
	closed  bool
	watches []adapter.ReleaseWatch
	subs    []subQueue // per node: Watch and Unwatch, in order
	// watched holds the nodes each key with waiters listens on
	// (subscribe).
	watched map[string][]int
	// released counts this client's releases of the keys, per slot of a
	// key's hash (keyHash), so that a Lock call whose attempt failed
	// while this client released the key knows it when it joins the
	// queue, too late to be woken (releasedMark). Written with mu held.
	released [64]atomic.Uint64
	queues   map[string][]*waiter
	// sets holds the waiters for sets of resources, by key (multi.go):
	// they are woken by the release of any key of their set, and never
	// stand in a key's queue.
	sets map[string][]*waiter
	// own holds the values of this client's recent releases of keys that
	// had waiters: their announcements come back through the nodes after
	// Unlock already woke the next waiter, and are dropped.
	own     map[string]struct{}
	ownRing [64]string
	ownNext int
	// turns ranks this client's waiters among the clients' on each
	// announcement (rank), per key with waiters, and for the restKeys keys
	// whose queues emptied last (rest): a client that takes a key and
	// waits for it again (a single worker does at every turn) still knows
	// which clients released it before it did.
	turns map[string]*turns
	rests uint64 // the keys whose queues emptied so far
}

// turns is what a client heard of the turns the clients took at one key.
type turns struct {
	// heard holds the values of the last releases recorded (heardNext
	// the oldest): every watched node announces each of them, and each
	// counts once, even when a node that lags announces it after a
	// faster node announced the next release.
	heard     [heardReleases]string
	heardNext int
	// order holds the tags (value.go) of the clients whose releases of
	// the key were announced while this client waited, each once, the
	// client that released least recently first: every client hears the
	// same announcements, so every client ranks alike (rank).
	order []string
	// rested counts the keys whose queues emptied, up to this one's
	// (handoff.rests), while this key has none; 0 while it has.
	rested uint64
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

// seen reports whether the release of value was recorded already: its
// announcement by another node, or a late one (turns.heard).
func (ts *turns) seen(value string) bool {
	return slices.Contains(ts.heard[:], value)
}

// subQueue is one node's pending Watch and Unwatch calls, run in order by
// one goroutine at a time, so that an Unwatch never overtakes the Watch
// that follows it.
type subQueue struct {
	ops     []subOp
	running bool
}

type subOp struct {
	key string
	on  bool
}

// waiter is one Lock call waiting to retry. ch holds at most one pending
// wake-up. head is closed when the waiter reaches the front of its queue.
// handing is set while this client's Unlock acquires on the waiter's
// behalf: no other wake-up is given to it then.
type waiter struct {
	ch      chan wake
	head    chan struct{}
	handing bool // under handoff.mu

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

// newHandoff returns the hand-off of a client whose nodes support it, or nil
// when none does or it is turned off.
func newHandoff(c *Client) *handoff {
	if c.opts.noHandoff {
		return nil
	}
	h := &handoff{
		c:      c,
		nodes:  make([]adapter.HandoffNode, len(c.nodes)),
		queues: map[string][]*waiter{},
		own:    map[string]struct{}{},
		sets:   map[string][]*waiter{},
		turns:  map[string]*turns{},

		watched: map[string][]int{},
	}
	any := false
	h.transfer = c.async != nil
	for i, n := range c.nodes {
		if hn, ok := n.(adapter.HandoffNode); ok {
			h.nodes[i], any = hn, true
		}
		if _, ok := n.(adapter.TransferNode); !ok {
			h.transfer = false
		}
	}
	if !any {
		return nil
	}
	h.watches = make([]adapter.ReleaseWatch, len(c.nodes))
	h.subs = make([]subQueue, len(c.nodes))
	return h
}

// join queues a new waiter for key, subscribing to key's releases on every
// node when it is the key's first waiter.
func (h *handoff) join(ctx context.Context, key, resource string, o lockOptions) *waiter {
	w := &waiter{ch: make(chan wake, 1), head: make(chan struct{}), ctx: ctx, resource: resource, opts: o}
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
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
	return w
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
			// enough. More would make the waiter attempt again
			// after a failure, once per node, and a herd of it.
			return
		}
		ts.record(value)
	}
	if _, own := h.own[value]; own {
		return
	}
	if len(q) > 0 {
		h.give(q[0], wake{remote: true, slots: h.rank(ts), from: from})
	}
	h.wakeSets(key) // multi.go
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
	h.wakeSets(key) // multi.go
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

// rank is how many rank slots (retry.go: rankSlot) the longest waiter of a
// key with turns ts lets pass after an announced release before its
// attempt, so that the waiters of several clients woken by one release
// attempt one after another, the client that has waited longest first,
// instead of all at once (R10: in a herd the first to reach the nodes wins
// at random, every other attempt is wasted, and votes may split). Every
// client hears the same announcements, and each value names its client
// (value.go: tagOf), so the order of the clients' last releases (turns.
// order) is the same in every client: a client lets pass one slot per
// client that released before it did, the client that released least
// recently goes at once, the one that just released last. A client whose
// release was not heard since it waits (new to the key, or passed over)
// has waited longest: it goes at once. So does a client alone at the key,
// except after its own release, when it lets one slot pass, so that a
// rival it did not know of, going at once, reaches the nodes first. The
// ladder is the same for every client however many clients share the key
// (a ladder of fixed length made two or three clients wait most of the
// minimum retry delay at every turn). Called with h.mu held.
func (h *handoff) rank(ts *turns) int {
	if ts == nil {
		return 0
	}
	switch i := slices.Index(ts.order, h.c.values.tag); {
	case i < 0:
		return 0
	case i == len(ts.order)-1:
		return max(i, 1) // its own release was the last one heard
	default:
		return i
	}
}

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
// waiter of this client with options o without asking any node: the keys
// hold l's value on a quorum until l's Until (R9, R13), and this client
// decides which of its own Lock calls relies on them, so the waiter
// continues l (same value, same Until, the chain's runs and extensions,
// R17) at no round trip. It returns nil, and the hand-over acquires anew
// (transfer, or release and SET NX), unless l is one exclusive lock of
// this client's own random value that nobody read (Value, Handle: a value
// known outside must not serve two holders, R18) nor bound to a record
// (PutRecord: the record names its holder), that no extension found gone
// from too many nodes (R13: its keys may be free), without fencing (every
// holder gets a new token), with the waiter's ttl and drift, and with at
// least keepNum/keepDen of the waiter's validity left, on a client that is
// not closed. Called with h.mu held: the caller grants the lock (life.go:
// grant) and reports it to the observers once h.mu is unlocked.
func (c *Client) keep(l *Lock, o lockOptions) *Lock {
	if l.shown == nil || l.shown.Load() || l.mode != modeExclusive || l.keys != nil || c.opts.fencing || o.ttl != l.ttl || drift(o.ttl, o.driftFactor) != l.drift {
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
	// shown again under l.mu, where Value and Handle set it: from here on
	// they show no value (passed).
	if l.gone || l.shown.Load() || until.Sub(now) < (o.ttl-l.drift)/keepDen*keepNum {
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
		inflight:   l.inflight,
		run:        l.run + 1,
		mode:       modeExclusive,
		shown:      l.shown,
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

// HandoffWatchNodes is how many nodes a client listens to for the
// announced releases of a resource it waits for (when it has that many
// adapter.HandoffNodes). Every node announces every release, so one would
// do while it is up; a second keeps the hand-off working while one node is
// down, and the client picks nodes that answered it lately (the timed retry
// of R10 covers the rest). Listening on every node cost more than it
// gained: each release woke every waiting client once per node, all at the
// same instant, and on a busy machine the release itself then took twice
// as long (8 OS processes x 4 workers on 5 redis-server nodes, 2 cores:
// 675-679 critical sections/s listening on 5 nodes, 668-696 on 3, 717-731
// on 2, 733-740 on 1; cd bench && go run . -only mp).
const HandoffWatchNodes = 2

// subscribe queues a Watch (on) or Unwatch of key on the nodes that listen
// for its releases (watchSet); one goroutine per node runs its queue in
// order. Called with h.mu held.
func (h *handoff) subscribe(key string, on bool) {
	if h.closed {
		return
	}
	var at []int
	if on {
		at = h.watchSet(key)
		h.watched[key] = at
	} else {
		at = h.watched[key]
		delete(h.watched, key)
	}
	for _, i := range at {
		h.queueSub(i, key, on)
	}
}

// queueSub queues a Watch (on) or Unwatch of key on node i, starting the
// node's goroutine (runSubs) unless it runs. Called with h.mu held.
func (h *handoff) queueSub(i int, key string, on bool) {
	s := &h.subs[i]
	s.ops = append(s.ops, subOp{key: key, on: on})
	if s.running || !h.c.bgAdd(1) {
		return
	}
	s.running = true
	go h.runSubs(i, h.nodes[i])
}

// rewatch moves key's subscriptions, while it has waiters, to the nodes
// watchSet picks now: the nodes chosen when its first waiter joined may
// have stopped answering since (down, frozen), and announce nothing, and a
// queue that never empties would keep them for good, its waiters woken by
// their timed retries alone (R10). Called by a waiter after each failed
// attempt, which is what tells the client which nodes answer; nothing
// changes while the chosen nodes do.
func (h *handoff) rewatch(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old, ok := h.watched[key]
	if !ok || h.closed {
		return
	}
	at := h.watchSet(key)
	if slices.Equal(at, old) {
		return
	}
	h.watched[key] = at
	for _, i := range old {
		if !slices.Contains(at, i) {
			h.queueSub(i, key, false)
		}
	}
	for _, i := range at {
		if !slices.Contains(old, i) {
			h.queueSub(i, key, true)
		}
	}
}

// watchSet returns the nodes to listen on for key's releases:
// HandoffWatchNodes of the capable nodes, taken in order from one chosen by
// key's hash (so that many keys' subscriptions spread over the nodes),
// those that answered this client within the last limit first (one that
// did not may be down, and would announce nothing). Called with h.mu held.
func (h *handoff) watchSet(key string) []int {
	n := len(h.nodes)
	first := int(keyHash(key) % uint32(n))
	recent := time.Since(h.c.born) - timeoutLimit(h.c.opts.nodeTimeout, 0)
	var up, rest []int
	for k := range n {
		i := (first + k) % n
		switch {
		case h.nodes[i] == nil:
		case h.c.heard[i].Load() > max(int64(recent), 0): // 0: never
			up = append(up, i)
		default:
			rest = append(rest, i)
		}
	}
	return append(up, rest...)[:min(HandoffWatchNodes, len(up)+len(rest))]
}

// runSubs runs node i's queue of Watch and Unwatch calls, in order, until
// it is empty or the client closes.
func (h *handoff) runSubs(i int, n adapter.HandoffNode) {
	defer h.c.bg.Done()
	for {
		h.mu.Lock()
		s := &h.subs[i]
		if len(s.ops) == 0 || h.closed || h.c.isClosed() {
			s.ops, s.running = nil, false
			h.mu.Unlock()
			return
		}
		op := s.ops[0]
		s.ops = s.ops[1:]
		h.mu.Unlock()
		w, err := h.watch(i, n)
		if err != nil {
			continue // the timed retry covers it (R10)
		}
		ctx, cancel := context.WithTimeout(context.Background(), handoffSubscribeTimeout)
		if op.on {
			_ = w.Watch(ctx, op.key)
		} else {
			_ = w.Unwatch(ctx, op.key)
		}
		cancel()
	}
}

// watch returns node i's subscription, opening it on first use.
func (h *handoff) watch(i int, n adapter.HandoffNode) (adapter.ReleaseWatch, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.watches[i] != nil {
		return h.watches[i], nil
	}
	w, err := n.WatchReleases(func(key, value string) { h.notify(i, key, value) })
	if err != nil {
		return nil, err
	}
	h.watches[i] = w
	return w, nil
}

// close ends the subscriptions; called by Client.Close once the background
// work is done.
func (h *handoff) close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.closed = true
	ws := h.watches
	h.watches = make([]adapter.ReleaseWatch, len(ws))
	h.mu.Unlock()
	for _, w := range ws {
		if w != nil {
			_ = w.Close()
		}
	}
}

// leaveHandoff takes a finished Lock call out of its key's queue, or a
// LockAll call out of its set's waiters; acquired tells whether it got the
// lock.
func (c *Client) leaveHandoff(t target, w *waiter, acquired bool) {
	switch {
	case c.hand == nil || w == nil:
	case t.keys != nil:
		c.hand.leaveSet(t.keys, w) // multi.go
	default:
		c.hand.leave(t.key, w, acquired)
	}
}

// drop unlocks in the background a lock handed to a Lock call that had
// left (its context ended) before taking it: Unlock hands it on, or
// releases it (R12). When Close began before, with no settler running, the
// keys are left to expire.
func (c *Client) drop(l *Lock) {
	c.settle(false, func() { _ = l.Unlock(context.Background()) })
}
