package redlock

import (
	"context"
	"slices"
	"time"

	"dlm/redlock/adapter"
)

// The hand-off's subscriptions in the background (handoff.go has the
// overview): the per-node queue of the Watch and Unwatch calls that a
// key's waiters ask for (handoff_wait.go: subscribe), the goroutine that
// runs it, and the look at the key once a subscription is confirmed.

// handoffSubscribeTimeout bounds one SUBSCRIBE or UNSUBSCRIBE of the
// hand-off, which runs in the background.
const handoffSubscribeTimeout = time.Second

// A SUBSCRIBE that fails (the subscription's connection could not be made,
// or broke, or the node did not answer in time) is tried again this many
// times in all, after handoffSubscribeRetry, then twice as long each time:
// a waiter that listens on none of its nodes hears of no release and
// sleeps out its timed retry (R10), and most such failures last less than
// a second (a first connection on a busy machine, a node restarting).
const (
	handoffSubscribeTries = 4
	handoffSubscribeRetry = 50 * time.Millisecond
)

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
	gen uint64 // of a Watch: its subscription's generation (fresh)
}

// queueSub queues op, a Watch or Unwatch, on node i, starting the node's
// goroutine (runSubs) unless it runs. Called with h.mu held.
func (h *handoff) queueSub(i int, op subOp) {
	s := &h.subs[i]
	s.ops = append(s.ops, op)
	if s.running || !h.c.bgAdd(1) {
		return
	}
	s.running = true
	go h.runSubs(i, h.nodes[i])
}

// rewatch moves key's subscriptions, while it has waiters, to better
// nodes, as watchSet ranks them now: the nodes chosen when its first
// waiter joined may have stopped answering since (down, frozen), and
// announce nothing, and a queue that never empties would keep them for
// good, its waiters woken by their timed retries alone (R10). And when an
// attempt woken by an announced release found the key still held (held)
// on none of the nodes it listens on, the release reached those first and
// is still on its way to the others (slow to apply it): the subscription
// moves to nodes that held, which will announce it, and whose look
// (confirmed) finds it if it came first. Called by a waiter after each
// failed attempt, which is what tells the client which nodes answer and
// hold; nothing changes while the chosen nodes answer.
func (h *handoff) rewatch(key string, held uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old, ok := h.watched[key]
	if !ok || h.closed {
		return
	}
	for _, i := range old {
		if i < 64 && held&(1<<i) != 0 {
			held = 0 // one it listens on will announce the release (heard)
			break
		}
	}
	at := h.watchSet(key, held, old)
	if len(at) == len(old) && !slices.ContainsFunc(at, func(i int) bool { return !slices.Contains(old, i) }) {
		return
	}
	h.watched[key] = at
	h.subGen++
	gen := h.subGen
	h.fresh[key] = gen // the new nodes look at the key (confirmed)
	for _, i := range old {
		if !slices.Contains(at, i) {
			h.queueSub(i, subOp{key: key})
		}
	}
	for _, i := range at {
		if !slices.Contains(old, i) {
			h.queueSub(i, subOp{key: key, on: true, gen: gen})
		}
	}
}

// runSubs runs node i's queue of Watch and Unwatch calls, in order, until
// it is empty or the client closes; a Watch that fails is tried again
// (handoffSubscribeTries) before the next call.
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
		delay := handoffSubscribeRetry
		for try := 1; !h.runSub(i, n, op) && try < handoffSubscribeTries && h.pause(delay) && h.stillWatched(i, op.key); try++ {
			delay *= 2
		}
	}
}

// runSub runs op, a Watch or Unwatch, on node i, and reports whether it
// is done: false when a Watch failed (an Unwatch that fails leaves a
// subscription that announces releases nobody waits for).
func (h *handoff) runSub(i int, n adapter.HandoffNode, op subOp) bool {
	w, err := h.watch(i, n)
	if err != nil {
		return !op.on
	}
	ctx, cancel := context.WithTimeout(context.Background(), handoffSubscribeTimeout)
	defer cancel()
	if !op.on {
		_ = w.Unwatch(ctx, op.key)
		return true
	}
	if w.Watch(ctx, op.key) != nil {
		return false
	}
	h.confirmed(ctx, i, n, op)
	return true
}

// pause waits d, and reports false when the client closed meanwhile.
func (h *handoff) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.c.stop:
		return false
	}
}

// stillWatched reports whether key is still to be watched on node i: the
// client is open, key's subscription still has node i, and no later
// Watch or Unwatch of key is queued there (it runs next instead of a
// retry, which would overtake it).
func (h *handoff) stillWatched(i int, key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || !slices.Contains(h.watched[key], i) {
		return false
	}
	return !slices.ContainsFunc(h.subs[i].ops, func(op subOp) bool { return op.key == key })
}

// confirmed is told that node n (node i) now delivers key's announced
// releases (op, a Watch). On each node of the subscription made when key's
// waiters began to listen (subscribe) or moved to other nodes (rewatch),
// the release they wait for may have come after their failed attempt and
// before anybody listened, announced to nobody: they would sleep out R10's
// delay while the key is free. So the node is asked for the key
// (adapter.InspectNode), and the longest waiter is woken when the key is
// free there (wakeFrom); a key still held will most likely be released
// under the subscription, and announced. Every node of the subscription
// looks, not only the first to confirm: the holder's release may reach
// one node late or not at all (it timed out on a busy node, and the key
// lives out its ttl, announced to nobody) while the others are free;
// the waiter is then woken at most once more than it needs. A key held
// by the failed attempt of the waiter to wake (gave) is free once that
// attempt's releases (R8.5) are answered: the attempt may have reached n
// after the release, and n answered it late. The waiter is woken then
// (gaveBack), or now if they are. The look counts as node i's
// announcement of the release (wakeFrom). Without InspectNode, the
// timed retry covers the gap (adapter.ReleaseWatch).
func (h *handoff) confirmed(ctx context.Context, i int, n adapter.HandoffNode, op subOp) {
	key := op.key
	h.mu.Lock()
	gen, fresh := h.fresh[key]
	fresh = fresh && gen == op.gen // not a Watch that an Unwatch follows
	h.mu.Unlock()
	in, ok := n.(adapter.InspectNode)
	if !fresh || !ok {
		return
	}
	st, err := in.Inspect(ctx, key)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	look := func(w *waiter, set bool) {
		switch {
		case st.Kind == adapter.KeyAbsent:
		case st.Kind == adapter.KeyLock && w.gave != "" && st.Value == w.gave:
			if !w.gaveFreed {
				w.lookPending, w.lookFrom = true, i // woken by gaveBack
				return
			}
		default:
			return // held: its release will be announced
		}
		h.wakeFrom(key, w, set, i)
	}
	if q := h.queues[key]; len(q) > 0 {
		look(q[0], false)
	}
	for _, w := range h.sets[key] {
		look(w, true)
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
