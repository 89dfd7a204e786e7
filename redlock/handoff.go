package redlock

import (
	"context"
	"sync"
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
	// announces the release of key to every subscriber of key on this node,
	// in the same atomic step. It reports whether a key was deleted.
	ReleaseAnnounce(ctx context.Context, key, value string) (bool, error)
	// WatchReleases opens one subscription on the node, multiplexed across
	// keys: after Watch(key), every announced release of key calls
	// notify(key). notify does not block. The subscription may be opened
	// lazily, on the first Watch.
	WatchReleases(notify func(key string)) (ReleaseWatch, error)
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
}

// waiter is one Lock call waiting to retry. ch holds at most one pending
// wake-up.
type waiter struct{ ch chan struct{} }

// newHandoff returns the hand-off of a client whose nodes support it, or nil
// when none does or it is turned off.
func newHandoff(c *Client) *handoff {
	if c.opts.noHandoff {
		return nil
	}
	h := &handoff{c: c, nodes: make([]HandoffNode, len(c.nodes)), queues: map[string][]*waiter{}}
	any := false
	for i, n := range c.nodes {
		if hn, ok := n.(HandoffNode); ok {
			h.nodes[i], any = hn, true
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
func (h *handoff) join(key string) *waiter {
	w := &waiter{ch: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	h.queues[key] = append(q, w)
	if len(q) == 0 && !h.closed {
		h.subscribe(key, true)
	}
	return w
}

// leave removes w from key's queue. A wake-up w had not used passes to the
// next waiter; the last waiter unsubscribes.
func (h *handoff) leave(key string, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	for i, x := range q {
		if x == w {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(h.queues, key)
		if !h.closed {
			h.subscribe(key, false)
		}
		return
	}
	h.queues[key] = q
	select {
	case <-w.ch:
		h.wake(q[0])
	default:
	}
}

// notify wakes the longest-waiting waiter of key: one waiter per
// announcement, so that waiters do not split the votes (R10) and the oldest
// goes first.
func (h *handoff) notify(key string) {
	h.mu.Lock()
	if q := h.queues[key]; len(q) > 0 {
		h.wake(q[0])
	}
	h.mu.Unlock()
}

func (h *handoff) wake(w *waiter) {
	select {
	case w.ch <- struct{}{}:
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
		h.c.bg.Add(1)
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

// waitRetry is the wait of Lock between attempts (R10). Without hand-off it
// sleeps a random delay. With hand-off, the first call joins key's queue
// and returns at once (a release between the failed attempt and the
// subscription is then not missed); later calls wait for a release
// announcement, then a random jitter of up to one attempt's duration (which
// keeps R10's desynchronizing role between clients), or for the timed random
// delay, whichever comes first. It returns ctx's error when ctx ends.
func (c *Client) waitRetry(ctx context.Context, key string, o lockOptions, elapsed time.Duration, w **waiter) error {
	h := c.hand
	if h != nil && *w == nil {
		*w = h.join(key)
		return ctx.Err()
	}
	t := time.NewTimer(c.retryDelay(o))
	defer t.Stop()
	var wake <-chan struct{}
	if h != nil {
		wake = (*w).ch
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	case <-wake:
	}
	j := c.jitter(min(elapsed, o.retryMin))
	if j <= 0 {
		return nil
	}
	t.Reset(j)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
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

// leaveHandoff takes a finished Lock call out of key's queue.
func (c *Client) leaveHandoff(key string, w *waiter) {
	if c.hand != nil && w != nil {
		c.hand.leave(key, w)
	}
}

// releaseNode releases key on node n for Unlock (R5, R12), announcing the
// release where the node can (hand-off, R14).
func (c *Client) releaseNode(ctx context.Context, n Node, key, value string) (bool, error) {
	if hn, ok := n.(HandoffNode); ok && c.hand != nil {
		return hn.ReleaseAnnounce(ctx, key, value)
	}
	return n.Release(ctx, key, value)
}

// released tells this client's own waiters for key, at once, that Unlock
// gave it back (no round trip through the nodes).
func (c *Client) released(key string) {
	if c.hand != nil {
		c.hand.notify(key)
	}
}

// WithHandoff turns the hand-off without polling on or off (R10, R14): when
// on and the nodes implement HandoffNode, Unlock announces each release and
// a waiting Lock retries at once on the announcement (after a small random
// jitter), keeping the timed random retry as a fallback. Default on.
func WithHandoff(on bool) Option {
	return clientOption(func(o *clientOptions) { o.noHandoff = !on })
}
