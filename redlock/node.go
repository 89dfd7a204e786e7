package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dlm/redlock/adapter"
)

// Node is one independent Redis master, seen at Redlock's level of meaning
// (R3, R5, R17): acquire, release and extend a key with a value and a ttl.
// Build nodes with an adapter package (redlock/goredis, redlock/rueidis);
// the interface and the optional capabilities an adapter may add are
// documented in redlock/adapter, for adapter writers.
type Node = adapter.Node

// Outcome is what one node did in one acquisition attempt.
type Outcome int

// The outcomes of one node in one attempt.
const (
	// NoReply: the attempt was decided, or its context ended, before this
	// node answered; the client did not wait for it (R8.2, R15). A failed
	// final attempt (TryLock, or the last of WithTries) waits for every
	// node before it returns, so its error has no NoReply unless the
	// context ended it.
	NoReply Outcome = iota
	// Acquired: the node set the key to this client's value.
	Acquired
	// Held: the node answered that the key is held by another value.
	Held
	// Failed: the node answered with an error (connection refused, ...).
	Failed
	// TimedOut: the node did not answer within the node timeout.
	TimedOut
)

// String returns the outcome's name as used in error messages.
func (o Outcome) String() string {
	switch o {
	case NoReply:
		return "no reply"
	case Acquired:
		return "acquired"
	case Held:
		return "held by another"
	case Failed:
		return "error"
	case TimedOut:
		return "timed out"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// NodeResult is the outcome of one node in one attempt.
type NodeResult struct {
	// Node is the node's name: its String method if it has one, else "node[i]".
	Node string
	// Outcome is what the node did.
	Outcome Outcome
	// Err is the node's error for Failed and TimedOut, else nil.
	Err error
	// Latency is how long the node took to answer (zero for NoReply).
	Latency time.Duration
}

// nodeName names node i of a client for messages.
func nodeName(n Node, i int) string {
	if s, ok := n.(fmt.Stringer); ok {
		if name := s.String(); name != "" {
			return name
		}
	}
	return fmt.Sprintf("node[%d]", i)
}

// reply is one node's answer in a fan-out.
type reply struct {
	i       int
	none    bool // no answer (NoReply)
	ok      bool
	err     error
	latency time.Duration
}

// refused reports whether the node answered that the key is held, without
// an error: an acquisition so refused set nothing on the node (adapter.Node:
// false with a nil error means the key is held).
func (r reply) refused() bool { return !r.none && !r.ok && r.err == nil }

// outcome classifies a reply.
func (r reply) outcome() Outcome {
	switch {
	case r.none:
		return NoReply
	case r.err != nil && isTimeout(r.err):
		return TimedOut
	case r.err != nil:
		return Failed
	case r.ok:
		return Acquired
	}
	return Held
}

// isTimeout reports whether err is a node timeout: the context's deadline or
// an error that says it timed out. It is apart from outcome so that a reply
// without an error does not pay for the errors.As target.
func isTimeout(err error) bool {
	var timeout interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &timeout) && timeout.Timeout()
}

// undo is the request that undoes the acquisition req on a node (R5,
// R8.5): the release of its key, or of a set's keys (multi.go); a reader
// leaves the readers' hash (rw.go).
func undo(req adapter.Request) adapter.Request {
	return adapter.Request{Op: setOp(releaseOp(req.Op), req.Keys), Key: req.Key, Keys: req.Keys, Value: req.Value}
}

// do runs req on n by its blocking method.
func do(ctx context.Context, n Node, req adapter.Request) (bool, error) {
	switch req.Op {
	case adapter.OpAcquire:
		return n.Acquire(ctx, req.Key, req.Value, req.TTL)
	case adapter.OpReleaseAnnounce:
		if hn, ok := n.(adapter.HandoffNode); ok {
			return hn.ReleaseAnnounce(ctx, req.Key, req.Value)
		}
		return n.Release(ctx, req.Key, req.Value)
	case adapter.OpRelease:
		return n.Release(ctx, req.Key, req.Value)
	case adapter.OpExtend:
		return n.Extend(ctx, req.Key, req.Value, req.TTL)
	case adapter.OpTransfer:
		if tn, ok := n.(adapter.TransferNode); ok {
			return tn.Transfer(ctx, req.Key, req.From, req.Value, req.TTL)
		}
	}
	if mn, ok := n.(adapter.MultiNode); ok && req.Op.IsMulti() {
		return doAll(ctx, mn, req) // multi.go
	}
	if isRWOp(req.Op) {
		return doRW(ctx, n, req) // rw.go
	}
	return false, invalidf("unknown node operation %v", req.Op)
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
