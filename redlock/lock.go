package redlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Lock is a held lock on one resource. It is safe for concurrent use: Extend,
// Unlock and the accessors may be called from any goroutine.
//
// The lock is held, at most, until Until (R6, R9): the keys live on a quorum
// of nodes at least that long, provided clocks advance at about the same rate
// (see the package documentation for what a pause or a clock jump does).
type Lock struct {
	client   *Client
	resource string
	key      string
	value    string
	ttl      time.Duration
	drift    time.Duration
	inflight *sync.WaitGroup // acquire requests of the grant still in flight
	token    uint64          // fencing token (fencing.go), 0 without fencing

	// Life of the lock (life.go), set once at the grant.
	granted  time.Time
	maxExt   int
	every    time.Duration // auto-extension interval, 0 without it
	quit     chan struct{} // auto: closed by Unlock to stop the extender
	quitOnce sync.Once
	exited   chan struct{} // auto: closed when the extender returns

	mu         sync.Mutex
	until      time.Time
	released   bool
	extensions int           // successful extensions (WithMaxExtensions)
	done       chan struct{} // Done; made at the grant (auto) or on demand
	doneClosed bool          // done has been closed
	err        error         // why the lock is no longer held (Err)
	expiry     *time.Timer   // closes Done at Until, without auto-extension
}

// Resource returns the name of the locked resource.
func (l *Lock) Resource() string { return l.resource }

// Value returns the lock's random value (R4): 20 bytes from crypto/rand,
// base64url-encoded. It is what the nodes hold under the lock key, and can
// serve a storage system as a check-and-set guard (R18).
func (l *Lock) Value() string { return l.value }

// TTL returns the lock validity time the lock was acquired with.
func (l *Lock) TTL() time.Duration { return l.ttl }

// Until returns the moment (on this process's monotonic clock) after which
// the lock may be held by another client: T1 + ttl - drift of the last
// acquisition or extension (R9).
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Validity returns how much of the lock's validity remains now: Until minus
// the current time, or zero once it has passed or the lock was released.
func (l *Lock) Validity() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return 0
	}
	return max(0, time.Until(l.until))
}

// fanout sends req to every node at once (R15) and returns each reply, in
// node order, once every node has answered or timed out: without a goroutine
// per node when the nodes are AsyncNodes (async.go).
func (c *Client) fanout(ctx context.Context, req Request) []reply {
	if c.async != nil {
		return c.fanoutAsync(ctx, req)
	}
	out := make([]reply, len(c.nodes))
	nctx, cancel := context.WithTimeout(ctx, c.opts.nodeTimeout) // shared (callIn)
	defer cancel()
	op := func(ctx context.Context, n Node) (bool, error) { return do(ctx, n, req) }
	var wg sync.WaitGroup
	wg.Add(len(c.nodes))
	for i := range c.nodes {
		go func() {
			defer wg.Done()
			out[i] = c.callIn(nctx, i, op)
		}()
	}
	wg.Wait()
	return out
}

// do runs req on n by its blocking method.
func do(ctx context.Context, n Node, req Request) (bool, error) {
	switch req.Op {
	case OpAcquire:
		return n.Acquire(ctx, req.Key, req.Value, req.TTL)
	case OpReleaseAnnounce:
		if hn, ok := n.(HandoffNode); ok {
			return hn.ReleaseAnnounce(ctx, req.Key, req.Value)
		}
		return n.Release(ctx, req.Key, req.Value)
	case OpRelease:
		return n.Release(ctx, req.Key, req.Value)
	case OpExtend:
		return n.Extend(ctx, req.Key, req.Value, req.TTL)
	case OpTransfer:
		if tn, ok := n.(TransferNode); ok {
			return tn.Transfer(ctx, req.Key, req.From, req.Value, req.TTL)
		}
	}
	return false, invalidf("unknown node operation %v", req.Op)
}

// Unlock releases the lock on every node, whether or not the client believes
// it locked that node (R12), with the compare-and-delete script of R5: it
// never deletes a key that holds another value. It returns nil when a quorum
// of nodes deleted this lock's key; ErrNotHeld when too many nodes answered
// that the key was gone or not this lock's (it had expired or been lost);
// otherwise ErrUnlockFailed (errors or timeouts), joined with the nodes'
// errors. After Unlock the lock is no longer held, whatever the result.
//
// Over AsyncNodes (redlock/rueidis) Unlock returns as soon as a quorum
// deleted the key: the releases on slower nodes go on in the background,
// bounded by the node timeout, and Client.Close waits for them. Over
// blocking nodes it waits for every node.
//
// When another Lock call of the same client waits for the resource and the
// nodes are TransferNodes, Unlock may pass the lock to it instead (see
// WithHandoffLimit): it then returns nil at once, and the nodes swap this
// lock's value for the waiter's in the background.
func (l *Lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return ErrNotHeld
	}
	l.released = true
	l.mu.Unlock()
	first := l.finish(ErrUnlocked) // Done closes at once (life.go)
	l.stopExtending()
	// A node that had not answered the acquisition yet may still set the
	// key: wait for those requests (bounded by the node timeout) first,
	// unless the nodes keep each node's requests in order (AsyncNode), so
	// that the release reaches a node after the acquisition. Fenced
	// acquisitions do not go through AsyncNode.Start, so their order is not
	// promised: they are waited for.
	if l.client.async == nil || l.client.opts.fencing {
		l.inflight.Wait()
	}
	if c := l.client; c.hand != nil && c.hand.pass(l) {
		// Passed to this client's next waiter (pass.go): its keys took
		// the place of this lock's on every node, in one step.
		if first && len(c.obs) > 0 {
			c.obs.End(EndEvent{Resource: l.resource, Reason: ErrUnlocked, Held: time.Since(l.granted), Handed: true})
		}
		return nil
	}
	replies := l.client.releaseAll(ctx, l.key, l.value) // and hand-off (handoff.go)
	released := 0
	var errs []error
	for _, r := range replies {
		switch {
		case r.err != nil:
			errs = append(errs, nodeError(l.client.names[r.i], r.err))
		case r.ok:
			released++
		}
	}
	var err error
	switch notHeld := len(replies) - released - len(errs); {
	case released >= l.client.quorum:
	case notHeld > len(replies)-l.client.quorum:
		// A quorum answered that the key is gone or not ours: the lock had
		// expired or been lost before Unlock.
		err = errors.Join(append([]error{ErrNotHeld}, errs...)...)
	default:
		err = errors.Join(append([]error{ErrUnlockFailed}, errs...)...)
	}
	if c := l.client; first && len(c.obs) > 0 {
		c.obs.End(EndEvent{Resource: l.resource, Reason: ErrUnlocked, Held: time.Since(l.granted), Nodes: c.results(replies), Err: err})
	}
	return err
}

// Extend resets the lock's ttl on every node that still holds its value
// (R17). It succeeds only if a quorum was extended within the remaining
// validity; then Until moves to T1 + ttl - drift of this extension. It never
// re-creates a key that expired. It returns ErrNotHeld, contacting no node,
// when the validity has already passed or the lock was released, and
// ErrNotHeld when too many nodes no longer hold the value; ErrExtendFailed
// (joined with the nodes' errors) when errors or timeouts kept a quorum from
// confirming, in which case the lock is still held until the previous Until.
//
// Extensions are bounded (WithMaxExtensions, R17): beyond the bound Extend
// returns ErrMaxExtensions, contacting no node.
func (l *Lock) Extend(ctx context.Context) error { return l.extend(ctx, false) }

// extend is Extend, reported to the observers as manual or automatic.
func (l *Lock) extend(ctx context.Context, auto bool) error {
	c := l.client
	t1 := time.Now()
	var replies []reply
	err := l.doExtend(ctx, t1, &replies)
	if len(c.obs) > 0 {
		e := ExtensionEvent{Resource: l.resource, Auto: auto, Err: err, Elapsed: time.Since(t1)}
		if replies != nil {
			e.Nodes = c.results(replies)
		}
		c.obs.Extension(e)
	}
	return err
}

func (l *Lock) doExtend(ctx context.Context, t1 time.Time, out *[]reply) error {
	l.mu.Lock()
	until, released, bound := l.until, l.released, l.extensions >= l.maxExt
	l.mu.Unlock()
	if released || !t1.Before(until) {
		return ErrNotHeld
	}
	if bound {
		return ErrMaxExtensions
	}
	c := l.client
	replies := c.fanout(ctx, Request{Op: OpExtend, Key: l.key, Value: l.value, TTL: l.ttl})
	*out = replies
	t2 := time.Now()
	extended, notHeld := 0, 0
	var errs []error
	for _, r := range replies {
		switch {
		case r.err != nil:
			errs = append(errs, nodeError(c.names[r.i], r.err))
		case r.ok:
			extended++
		default:
			notHeld++
		}
	}
	newUntil := t1.Add(l.ttl - l.drift)
	switch {
	case extended >= c.quorum && t2.Before(until) && validity(l.ttl, t2.Sub(t1), l.drift) > 0:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.released {
			return ErrNotHeld
		}
		if newUntil.After(l.until) {
			l.until = newUntil
		}
		l.extensions++
		return nil
	case notHeld > len(c.nodes)-c.quorum || !t2.Before(until):
		return errors.Join(append([]error{ErrNotHeld}, errs...)...)
	}
	return errors.Join(append([]error{ErrExtendFailed}, errs...)...)
}

// NodeError is one node's error in a fan-out, naming the node.
type NodeError struct {
	// Node is the node's name.
	Node string
	// Err is what the node answered.
	Err error
}

// Error names the node and its error.
func (e *NodeError) Error() string { return e.Node + ": " + e.Err.Error() }

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }

func nodeError(node string, err error) error { return &NodeError{Node: node, Err: err} }
