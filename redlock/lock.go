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

	mu       sync.Mutex
	until    time.Time
	released bool
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

// fanout sends op to every node at once (R15) and returns each reply, in node
// order, once every node has answered or timed out.
func (c *Client) fanout(ctx context.Context, op func(context.Context, Node) (bool, error)) []reply {
	out := make([]reply, len(c.nodes))
	var wg sync.WaitGroup
	wg.Add(len(c.nodes))
	for i := range c.nodes {
		go func() {
			defer wg.Done()
			out[i] = c.call(ctx, i, op)
		}()
	}
	wg.Wait()
	return out
}

// Unlock releases the lock on every node, whether or not the client believes
// it locked that node (R12), with the compare-and-delete script of R5: it
// never deletes a key that holds another value. It returns nil when a quorum
// of nodes deleted this lock's key; otherwise ErrNotHeld (the lock had
// expired or been lost), joined with the nodes' errors. After Unlock the lock
// is no longer held, whatever the result.
func (l *Lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return ErrNotHeld
	}
	l.released = true
	l.mu.Unlock()
	// A node that had not answered the acquisition yet may still set the
	// key: wait for those requests (bounded by the node timeout) first.
	l.inflight.Wait()
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
	if released >= l.client.quorum {
		return nil
	}
	return errors.Join(append([]error{ErrNotHeld}, errs...)...)
}

// Extend resets the lock's ttl on every node that still holds its value
// (R17). It succeeds only if a quorum was extended within the remaining
// validity; then Until moves to T1 + ttl - drift of this extension. It never
// re-creates a key that expired. It returns ErrNotHeld, contacting no node,
// when the validity has already passed or the lock was released, and
// ErrNotHeld when too many nodes no longer hold the value; ErrExtendFailed
// (joined with the nodes' errors) when errors or timeouts kept a quorum from
// confirming, in which case the lock is still held until the previous Until.
func (l *Lock) Extend(ctx context.Context) error {
	l.mu.Lock()
	until, released := l.until, l.released
	l.mu.Unlock()
	t1 := time.Now()
	if released || !t1.Before(until) {
		return ErrNotHeld
	}
	c := l.client
	replies := c.fanout(ctx, func(ctx context.Context, n Node) (bool, error) {
		return n.Extend(ctx, l.key, l.value, l.ttl)
	})
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
