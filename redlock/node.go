package redlock

import (
	"context"
	"fmt"
	"time"
)

// Node is one independent Redis master, seen at Redlock's level of meaning
// (R3, R5, R17). Adapters such as redlock/goredis implement it; a Node must
// be safe for concurrent use. Every method must return promptly once ctx is
// done: the client bounds each call with the node timeout (R8.2).
type Node interface {
	// Acquire sets key to value with an expiry of ttl only if key does not
	// exist (R3: SET key value NX PX ttl). It reports whether the key was set;
	// false with a nil error means the key is held (by another value).
	Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// Release deletes key only if it holds value, atomically (R5). It reports
	// whether a key was deleted.
	Release(ctx context.Context, key, value string) (bool, error)
	// Extend resets the expiry of key to ttl only if key holds value,
	// atomically (R17). It never creates a key. It reports whether the
	// expiry was reset.
	Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
}

// Outcome is what one node did in one acquisition attempt.
type Outcome int

// The outcomes of one node in one attempt.
const (
	// NoReply: the attempt was decided before this node answered; the
	// client did not wait for it (R8.2, R15). A failed final attempt
	// (TryLock, or the last of WithTries) waits for every node before it
	// returns, so its error has no NoReply.
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
