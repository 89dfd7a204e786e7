package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// HandoffNode is an optional capability of a Node (found by type assertion):
// releases that announce themselves, so that waiters retry at once instead
// of sleeping out their random delay (R10, R14). A client whose nodes
// implement it hands a lock off without polling: Unlock releases with
// ReleaseAnnounce, and a waiting Lock subscribes to the resource's releases
// through one subscription per node (WatchReleases), shared by every
// resource the client waits for.
type HandoffNode interface {
	Node
	// ReleaseAnnounce is Release (R5) that, when it deletes key, also
	// announces the release of key, with the value released, to every
	// subscriber of key on this node, in the same atomic step. It reports
	// whether a key was deleted.
	ReleaseAnnounce(ctx context.Context, key, value string) (bool, error)
	// WatchReleases opens one subscription on the node, multiplexed across
	// keys: after Watch(key), every announced release of key calls
	// notify(key, value). notify does not block. The subscription may be
	// opened lazily, on the first Watch.
	WatchReleases(notify func(key, value string)) (ReleaseWatch, error)
}

// ReleaseWatch is one subscription to release announcements on one node,
// multiplexed across keys (see HandoffNode). Its methods are safe for
// concurrent use. Announcements are hints: one may be lost (a connection
// that drops, a subscription that arrives late), and the waiter's timed
// random retry (R10) covers that.
type ReleaseWatch interface {
	// Watch starts delivering the releases of key.
	Watch(ctx context.Context, key string) error
	// Unwatch stops delivering the releases of key.
	Unwatch(ctx context.Context, key string) error
	// Close ends the subscription.
	Close() error
}

// handoffSubscribeTimeout bounds one SUBSCRIBE or UNSUBSCRIBE of the
// hand-off, which runs in the background.
const handoffSubscribeTimeout = time.Second

// handoff is a client's side of the hand-off: a FIFO queue of waiters per
// key, woken one at a time by release announcements (from this client's own
// Unlock, or from any client through the nodes' subscriptions), and the
// per-node subscriptions, opened on first use.
type handoff struct {
	c     *Client
	nodes []HandoffNode // nil where a node lacks the capability

	mu      sync.Mutex
	closed  bool
	watches []ReleaseWatch
	queues  map[string][]*waiter
	// own holds the values of this client's recent releases of keys that
	// had waiters: their announcements come back through the nodes after
	// Unlock already woke the next waiter, and are dropped.
	own     map[string]struct{}
	ownRing [64]string
	ownNext int
	// runs counts, per key, the hand-overs in a row within this client
	// (WithHandoffLimit, pass.go).
	runs map[string]int
	// transfer: every node is a TransferNode, so Unlock may pass a lock
	// to the next waiter without a round trip (pass.go).
	transfer bool
}

// waiter is one Lock call waiting to retry. ch holds at most one pending
// wake-up: an announcement from the nodes (another client may be woken by it
// too: jitter), or this client's own Unlock, possibly with an attempt
// already sent. head is
// closed when the waiter reaches the front of its queue: only the front
// waiter runs the timed retry (R10), so that the waiters behind it do not
// load the nodes with attempts bound to fail.
type waiter struct {
	ch   chan wake
	head chan struct{}

	// The waiting Lock call, for an attempt prepared on its behalf
	// (handOver).
	ctx      context.Context
	resource string
	opts     lockOptions
}

// wake is one wake-up of a waiter: an announcement from the nodes (remote),
// this client's own Unlock, this client's Unlock with the attempt it sent
// for the waiter (pre), or with the lock itself (lock, pass.go).
type wake struct {
	remote bool
	pre    *attemptRun
	lock   *Lock
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
		nodes:  make([]HandoffNode, len(c.nodes)),
		queues: map[string][]*waiter{},
		own:    map[string]struct{}{},
		runs:   map[string]int{},
	}
	any := false
	h.transfer = c.async != nil
	for i, n := range c.nodes {
		if hn, ok := n.(HandoffNode); ok {
			h.nodes[i], any = hn, true
		}
		if _, ok := n.(TransferNode); !ok {
			h.transfer = false
		}
	}
	if !any {
		return nil
	}
	h.watches = make([]ReleaseWatch, len(c.nodes))
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
		close(w.head)
		if !h.closed {
			h.subscribe(key, true)
		}
	}
	return w
}

// leave removes w from key's queue; the last waiter unsubscribes. A wake-up
// w had not used is dropped (it is usually a late announcement of the
// release w itself acquired after), except an attempt sent for w, which is
// abandoned, and a lock passed to w, which is unlocked (and so passed on).
// A waiter that leaves without the lock wakes the next one.
func (h *handoff) leave(key string, w *waiter, acquired bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var pre *attemptRun
	var passed *Lock
	select {
	case wk := <-w.ch:
		pre, passed = wk.pre, wk.lock
	default:
	}
	q := h.queues[key]
	for i, x := range q {
		if x == w {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if pre != nil {
		// Sent for w, which left first: settled in the background, and
		// the lock handed on from there (abandon).
		h.c.abandon(key, pre)
	}
	if passed != nil {
		// Passed to w, which left first: unlocked in the background (it
		// takes h.mu), after w is out of the queue.
		h.c.drop(passed)
	}
	if len(q) == 0 {
		delete(h.queues, key)
		delete(h.runs, key)
		if !h.closed {
			h.subscribe(key, false)
		}
		return
	}
	h.queues[key] = q
	if !q[0].isHead() {
		close(q[0].head)
	}
	if !acquired && pre == nil && passed == nil {
		// w may have been handed the lock and given up (its context
		// ended): pass the turn on, lest the next waiter sleep out its
		// timed retry while the lock is free. At worst one futile attempt.
		h.wake(q[0], false)
	}
}

// queued reports whether key has waiters in this client.
func (h *handoff) queued(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queues[key]) > 0
}

// notify handles an announcement from a node: it wakes the longest-waiting
// waiter of key (one waiter per announcement, so that waiters do not split
// the votes, R10, and the oldest goes first), unless the release was this
// client's own and its waiter was already woken.
func (h *handoff) notify(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, own := h.own[value]; own {
		return
	}
	if q := h.queues[key]; len(q) > 0 {
		h.wake(q[0], true)
	}
}

// ownRelease wakes the longest-waiting waiter of key after this client's
// Unlock released value, and remembers value so that its announcements from
// the nodes do not wake another waiter.
func (h *handoff) ownRelease(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if len(q) == 0 || !h.turn(key) {
		return // none, or announced to every client (yield)
	}
	h.markOwn(value)
	h.wake(q[0], false)
}

// markOwn remembers value as one of this client's recent releases, whose
// announcements from the nodes are then dropped (notify); called with h.mu
// held.
func (h *handoff) markOwn(value string) {
	delete(h.own, h.ownRing[h.ownNext])
	h.ownRing[h.ownNext] = value
	h.ownNext = (h.ownNext + 1) % len(h.ownRing)
	h.own[value] = struct{}{}
}

// handOver is ownRelease for a release about to be sent to AsyncNodes
// (fanoutAsync). For a waiter whose Lock retries without a bound
// (WithTries 0) and without fencing, it also prepares the waiter's next
// attempt and gives it to the waiter; the caller sends each node's
// acquisition right behind its release (in one batch where the node is a
// BatchNode), so that the hand-off costs one round trip: each node executes
// its requests in order, so the SET NX finds the key released. It returns
// that attempt, or nil when it only woke the waiter (or there is none).
func (h *handoff) handOver(key, value string) *attemptRun {
	c := h.c
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if len(q) == 0 || !h.turn(key) {
		return nil // none, or announced to every client (yield)
	}
	h.markOwn(value)
	w := q[0]
	if len(w.ch) > 0 || w.opts.tries != 0 || c.opts.fencing || w.ctx.Err() != nil {
		h.wake(w, false)
		return nil
	}
	v, err := c.values.next()
	if err != nil {
		h.wake(w, false)
		return nil
	}
	pre, aerr := c.prepareAttempt(w.ctx, w.resource, key, v, w.opts, false)
	if aerr != nil {
		h.wake(w, false)
		return nil
	}
	w.ch <- wake{pre: pre} // room checked above; every sender holds h.mu
	return pre
}

// abandon settles an attempt sent for a waiter that left before taking it:
// it is decided in the background, a lock it won is released (and handed
// over), and when it failed the next waiter is woken.
func (c *Client) abandon(key string, a *attemptRun) {
	// a's nodes still count in c.bg until its verdict: never zero here.
	c.settle(true, func() {
		l, err := a.await()
		if err == nil {
			_ = l.Unlock(context.WithoutCancel(a.ctx)) // hands over in turn
			return
		}
		c.hand.wakeHead(key, false) // the lock may be free: the next waiter's turn
	})
}

// wakeHead wakes the longest-waiting waiter of key: as an announcement
// from the nodes (remote), or as this client's own release.
func (h *handoff) wakeHead(key string, remote bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[key]; len(q) > 0 {
		h.wake(q[0], remote)
	}
}

func (h *handoff) wake(w *waiter, remote bool) {
	select {
	case w.ch <- wake{remote: remote}:
	default:
	}
}

// subscribe watches (on) or unwatches key on every capable node, in the
// background; called with h.mu held.
func (h *handoff) subscribe(key string, on bool) {
	for i, n := range h.nodes {
		if n == nil {
			continue
		}
		if !h.c.bgAdd(1) {
			return // closing: no new subscriptions
		}
		go func() {
			defer h.c.bg.Done()
			w, err := h.watch(i, n)
			if err != nil {
				return // the timed retry covers it (R10)
			}
			ctx, cancel := context.WithTimeout(context.Background(), handoffSubscribeTimeout)
			defer cancel()
			if on {
				_ = w.Watch(ctx, key)
			} else {
				_ = w.Unwatch(ctx, key)
			}
		}()
	}
}

// watch returns node i's subscription, opening it on first use.
func (h *handoff) watch(i int, n HandoffNode) (ReleaseWatch, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.watches[i] != nil {
		return h.watches[i], nil
	}
	w, err := n.WatchReleases(h.notify)
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
	h.watches = make([]ReleaseWatch, len(ws))
	h.mu.Unlock()
	for _, w := range ws {
		if w != nil {
			_ = w.Close()
		}
	}
}

// waitTurn keeps a Lock call from barging past this client's waiters for
// the same key: when key has waiters, the call joins the end of the queue
// and waits for its turn (or its timed retry) before its first attempt.
// TryLock never waits.
func (c *Client) waitTurn(ctx context.Context, key, resource string, o lockOptions, w **waiter) (wake, error) {
	h := c.hand
	if h == nil || o.tries == 1 || !h.queued(key) {
		return wake{}, nil
	}
	*w = h.join(ctx, key, resource, o)
	return c.wait(ctx, o, 0, *w)
}

// waitRetry is the wait of Lock between attempts (R10). Without hand-off it
// sleeps a random delay. With hand-off, the first call joins key's queue
// and returns at once (a release between the failed attempt and the
// subscription is then not missed); later calls wait for a release
// announcement, then a random jitter of up to one attempt's duration (which
// keeps R10's desynchronizing role between clients), or for the timed random
// delay, whichever comes first. An attempt that set some keys but not a
// quorum (a split vote, R10) gave them back unannounced, so it wakes the
// next waiter itself. It returns ctx's error when ctx ends.
func (c *Client) waitRetry(ctx context.Context, key, resource string, o lockOptions, elapsed time.Duration, failed *AcquireError, w **waiter) (wake, error) {
	h := c.hand
	if h == nil {
		return c.wait(ctx, o, elapsed, nil)
	}
	if *w == nil {
		*w = h.join(ctx, key, resource, o)
		return wake{}, ctx.Err()
	}
	if failed != nil {
		for _, r := range failed.Nodes {
			if r.Outcome == Acquired {
				h.wakeHead(key, true)
				break
			}
		}
	}
	return c.wait(ctx, o, elapsed, *w)
}

// wait sleeps the timed random delay of R10, or less when w is woken: at
// once after this client's own Unlock (returning the attempt that Unlock
// sent for w, handOver, or the lock it passed to w, pass), after a jitter
// of up to elapsed (one attempt's duration, at most the minimum retry
// delay) after an announcement from the nodes.
func (c *Client) wait(ctx context.Context, o lockOptions, elapsed time.Duration, w *waiter) (wake, error) {
	var woken <-chan wake
	var promoted <-chan struct{}
	var t *time.Timer
	var timeout <-chan time.Time
	if w != nil {
		woken = w.ch
		if !w.isHead() {
			promoted = w.head
		}
	}
	if promoted == nil {
		t = time.NewTimer(c.retryDelay(o))
		defer t.Stop()
		timeout = t.C
	}
	var wk wake
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return wake{}, ctx.Err()
		case <-timeout:
			return wake{}, nil
		case <-promoted: // now at the front: run the timed retry
			promoted = nil
			t = time.NewTimer(c.retryDelay(o))
			defer t.Stop()
			timeout = t.C
		case wk = <-woken:
			done = true
		}
	}
	if !wk.remote {
		return wk, nil
	}
	j := c.jitter(min(elapsed, o.retryMin))
	if j <= 0 {
		return wake{}, nil
	}
	if t == nil {
		t = time.NewTimer(j)
		defer t.Stop()
	} else {
		t.Reset(j)
	}
	select {
	case <-ctx.Done():
		return wake{}, ctx.Err()
	case <-t.C:
		return wake{}, nil
	}
}

// jitter draws a random delay in [0, max].
func (c *Client) jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	c.rmu.Lock()
	d := time.Duration(c.rng.Int64N(int64(max) + 1))
	c.rmu.Unlock()
	return d
}

// leaveHandoff takes a finished Lock call out of key's queue; acquired
// tells whether it got the lock.
func (c *Client) leaveHandoff(key string, w *waiter, acquired bool) {
	if c.hand != nil && w != nil {
		c.hand.leave(key, w, acquired)
	}
}

// releaseAll is Unlock's release on every node (R5, R12): announced where
// the nodes can (hand-off, R14), waking this client's next waiter for the
// key once a quorum released (at once over asynchronous nodes, fanoutAsync).
func (c *Client) releaseAll(ctx context.Context, key, value string) []reply {
	if c.hand == nil {
		return c.fanout(ctx, Request{Op: OpRelease, Key: key, Value: value})
	}
	if c.async != nil {
		// The next waiter is woken as soon as the releases are queued
		// (fanoutAsync).
		return c.fanoutAsync(ctx, Request{Op: OpReleaseAnnounce, Key: key, Value: value})
	}
	r := &releaseRun{c: c, key: key, value: value, out: make([]reply, len(c.nodes))}
	var cancel context.CancelFunc
	r.nctx, cancel = context.WithTimeout(ctx, c.opts.nodeTimeout) // shared (callIn)
	defer cancel()
	r.wg.Add(len(c.nodes))
	for i := 1; i < len(c.nodes); i++ {
		go r.node(i)
	}
	r.node(0) // Unlock waits for every node anyway: one goroutine fewer
	r.wg.Wait()
	released := 0
	for _, r := range r.out {
		if r.ok {
			released++
		}
	}
	if released < c.quorum {
		c.hand.ownRelease(key, value) // expired or lost: the key may be free
	}
	return r.out
}

// WithHandoff turns the hand-off without polling on or off (R10, R14): when
// on and the nodes implement HandoffNode, Unlock announces each release and
// a waiting Lock retries at once on the announcement (after a small random
// jitter), keeping the timed random retry as a fallback. Default on.
func WithHandoff(on bool) Option {
	return clientOption(func(o *clientOptions) { o.noHandoff = !on })
}

// releaseRun is the state that releaseAll shares with the goroutines of its
// nodes, in one allocation.
type releaseRun struct {
	c          *Client
	nctx       context.Context // the node timeout (R8.2), shared (callIn)
	key, value string
	out        []reply
	ok         atomic.Int32 // nodes that released
	wg         sync.WaitGroup
}

// node releases on node i, announcing the release (do), and wakes
// this client's next waiter for the key once a quorum released.
func (r *releaseRun) node(i int) {
	defer r.wg.Done()
	c := r.c
	start := time.Now()
	ok, err := do(r.nctx, c.nodes[i], Request{Op: OpReleaseAnnounce, Key: r.key, Value: r.value})
	r.out[i] = reply{i: i, ok: ok && err == nil, err: err, latency: time.Since(start)}
	if r.out[i].ok && r.ok.Add(1) == int32(c.quorum) {
		c.hand.ownRelease(r.key, r.value)
	}
}
