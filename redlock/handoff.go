package redlock

import (
	"context"
	"sync"
	"sync/atomic"

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

// WithHandoffKeep lets a hand-over within this client keep the lock as it
// is, when it can: the waiter continues the holder's lock (same value,
// same Until, its chain's extensions) and Unlock asks no node, since the
// keys already hold that value on a quorum until then (R9, R13). Without
// it (the default), every hand-over acquires on the waiter's behalf, and
// the waiter's lock is confirmed by a quorum under a value of its own, as
// after its own attempt. A lock is kept only when it is one exclusive
// lock of the client's own random value (not WithValue), without fencing,
// whose Handle was not written nor a record published under it
// (PutRecord), that no extension found gone from too many nodes, with the
// waiter's ttl and drift factor and at least 7/8 of the waiter's validity
// (ttl - drift) left, on a client that is not closing. With this option,
// two holders in a row may share one value: a value the holder read
// (Value) is then no guard that tells holders apart, so keep it for
// locks whose value is not used outside the process. Reading the value
// changes nothing. It saves a round trip per hand-over within the client.
func WithHandoffKeep() Option {
	return clientOption(func(o *clientOptions) { o.handoffKeep = true })
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

// handoff is a client's side of the hand-off. Its state is in three parts,
// one job each, all under mu:
//   - queueing: who waits for which key, in which order, and this client's
//     releases that woke nobody (wait.go);
//   - listening: which nodes each key's waiters listen on, and the
//     per-node subscriptions (wait.go: subscribe, queueSub);
//   - ranking: which clients released each key in which order, and this
//     client's own recent releases (handoff_release.go).
type handoff struct {
	c     *Client
	nodes []adapter.HandoffNode // nil where a node lacks the capability
	// transfer: every node is a TransferNode: hand-overs turn the key
	// from one value to the next in one step.
	transfer bool

	mu     sync.Mutex
	closed bool
	queueing
	listening
	ranking
}

// queueing is who waits for what (wait.go).
type queueing struct {
	// queues holds the waiters of each key, in FIFO order.
	queues map[string][]*waiter
	// sets holds the waiters for sets of resources (multi.go), by key:
	// they are woken by the release of any key of their set, and never
	// stand in a key's queue.
	sets map[string][]*waiter
	// released counts this client's releases of the keys, per slot of a
	// key's hash (keyHash), so that a Lock call whose attempt failed
	// while this client released the key knows it when it joins the
	// queue, too late to be woken (releasedMark). Written with mu held.
	released [64]atomic.Uint64
}

// listening is where the waiters hear of releases (wait.go).
type listening struct {
	watches []adapter.ReleaseWatch // per node, opened on first use
	subs    []subQueue             // per node: Watch and Unwatch, in order
	// watched holds the nodes each key with waiters listens on
	// (subscribe).
	watched map[string][]int
	// fresh holds the keys with waiters, each with the generation of its
	// latest subscription (subGen): a release between a waiter's failed
	// attempt and a node's confirmation is announced to nobody there, so
	// each confirmation of that subscription looks at the key
	// (confirmed). A Watch of an earlier one, still queued, is followed
	// by its Unwatch, and must not take a look.
	fresh  map[string]uint64
	subGen uint64 // subscriptions made so far: the last one's generation
}

// ranking is what the client heard of the clients' turns (handoff_release.go).
type ranking struct {
	// own holds the values of this client's recent releases of keys that
	// had waiters: their announcements come back through the nodes after
	// Unlock already woke the next waiter, and are dropped. ownRing holds
	// the same values in the order they came, ownNext the next to go.
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

// newHandoff returns the hand-off of a client whose nodes support it, or nil
// when none does or it is turned off.
func newHandoff(c *Client) *handoff {
	if c.opts.noHandoff {
		return nil
	}
	h := &handoff{
		c:         c,
		nodes:     make([]adapter.HandoffNode, len(c.nodes)),
		queueing:  queueing{queues: map[string][]*waiter{}, sets: map[string][]*waiter{}},
		listening: listening{watched: map[string][]int{}, fresh: map[string]uint64{}},
		ranking:   ranking{own: map[string]struct{}{}, turns: map[string]*turns{}},
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

// newWaiting returns the waiting of c's Lock calls (wait.go): the
// hand-off's, setting c.hand, when the nodes support it and it is on, else
// the timed random delay alone.
func (c *Client) newWaiting() waiting {
	if c.hand = newHandoff(c); c.hand != nil {
		return c.hand
	}
	return timedWait{c}
}

// close ends the subscriptions; called by Client.Close once the background
// work is done.
func (h *handoff) close() {
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

// drop unlocks in the background a lock handed to a Lock call that had
// left (its context ended) before taking it: Unlock hands it on, or
// releases it (R12). When Close began before, with no settler running, the
// keys are left to expire.
func (c *Client) drop(l *Lock) {
	c.settle(false, func() { _ = l.Unlock(context.Background()) })
}
