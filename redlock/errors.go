package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrNotAcquired is returned (wrapped in an *AcquireError) by every
	// failed acquisition: Lock, TryLock.
	ErrNotAcquired = errors.New("redlock: lock not acquired")
	// ErrNoQuorum marks a failed acquisition in which so many nodes failed or
	// timed out that the rest are fewer than a quorum: the nodes are
	// unreachable, not merely held by another client.
	// Errors that satisfy it also satisfy ErrNotAcquired.
	ErrNoQuorum = errors.New("redlock: nodes unreachable, no quorum possible")
	// ErrNotHeld is returned by Unlock and Extend for a lock that is no
	// longer held: its validity passed, it was released, or its keys were
	// lost or taken on too many nodes.
	ErrNotHeld = errors.New("redlock: lock not held")
	// ErrExtendFailed is returned by Extend when too few nodes confirmed the
	// extension because of errors or timeouts. The lock is still held until
	// its previous Until, and Extend may be tried again.
	ErrExtendFailed = errors.New("redlock: lock not extended")
	// ErrUnlockFailed is returned by Unlock when errors or timeouts kept a
	// quorum of nodes from confirming the release. The lock is given up all
	// the same: keys that could not be deleted expire with their ttl.
	ErrUnlockFailed = errors.New("redlock: release not confirmed by a quorum")
	// ErrMaybeLost is joined to Unlock's ErrUnlockFailed when a node that
	// had granted the lock answered the release that it no longer held
	// it, while too few nodes confirmed the release to show that a quorum
	// held it to the end: the lock may have been lost before Unlock (its
	// keys flushed, evicted, or taken on a node that restarted), and
	// another client may have held it meanwhile. Work done under the lock
	// should be treated as done without it.
	ErrMaybeLost = errors.New("redlock: lock possibly lost before the release: a node that granted it no longer held it, and too few nodes confirmed the release")
	// ErrInvalid is wrapped by every error about bad input or configuration;
	// the message says which value is wrong and what is expected.
	ErrInvalid = errors.New("redlock: invalid argument")
	// ErrClosed is returned by a Client after Close, and is the Err of an
	// auto-extended lock whose client was closed.
	ErrClosed = errors.New("redlock: client closed")
	// ErrUnlocked is a lock's Err after Unlock.
	ErrUnlocked = errors.New("redlock: lock released by Unlock")
	// ErrLost is a lock's Err when an extension found that too many nodes
	// no longer hold it (their keys were deleted, or expired early).
	ErrLost = errors.New("redlock: lock lost: too many nodes no longer hold it")
	// ErrExpired is a lock's Err when its validity passed without a
	// successful extension.
	ErrExpired = errors.New("redlock: lock expired: validity passed without a successful extension")
	// ErrMaxExtensions is returned by Extend once the lock reached its
	// extension bound (WithMaxExtensions, R17).
	ErrMaxExtensions = errors.New("redlock: extension bound reached")
)

// invalidf returns an error wrapping ErrInvalid with a formatted reason.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// kindError is an error of several sentinel kinds (errors.Is holds for
// each) with one message: the first kind's text, then the detail, so that
// a user reads one "redlock:" prefix, not one per kind.
type kindError struct {
	kinds  []error
	detail string
}

func (e *kindError) Error() string   { return e.kinds[0].Error() + ": " + e.detail }
func (e *kindError) Unwrap() []error { return e.kinds }

// promotablef is an ErrInvalid that is also an ErrPromotableReplica.
func promotablef(format string, args ...any) error {
	return &kindError{kinds: []error{ErrInvalid, ErrPromotableReplica}, detail: fmt.Sprintf(format, args...)}
}

// AcquireError describes a failed acquisition. errors.Is(err,
// ErrNotAcquired) holds for every AcquireError; errors.Is(err, ErrNoQuorum)
// when failed or timed-out nodes left fewer than a quorum; errors.Is(err,
// context.Canceled) or context.DeadlineExceeded when the context is why it
// stopped; errors.Is(err, ErrClosed) when the client was closed.
type AcquireError struct {
	// Resource is the resource that was not acquired.
	Resource string
	// Attempts is the number of attempts made.
	Attempts int
	// Quorum is the number of nodes an attempt needed.
	Quorum int
	// Nodes holds each node's outcome in the last attempt, in node order.
	Nodes []NodeResult
	// Validity is the last attempt's computed validity when a quorum was
	// reached but too late (R8.3: validity not positive), else zero.
	Validity time.Duration
	// Fence holds each node's outcome in the fencing phase of the last
	// attempt (Acquired: the node confirmed the token) when its phase 1
	// reached a quorum (WithFencing), else nil.
	Fence []NodeResult
	// Patience is, when an attempt of the call timed out nodes after
	// waiting for nodes that answer slowly, how long it waited for them:
	// the most a grant of the lock may wait and still leave the validity
	// its holder needs to keep it (one more round trip). Healthy nodes
	// slower than that answer too late for the ttl: a longer ttl lets
	// them grant. With RoundTrip, the slowest round trip of the nodes
	// over which a lock kept by auto-extension is kept. Zero otherwise.
	Patience time.Duration
	// TTL is the ttl of the lock asked, with Patience; else zero.
	TTL time.Duration
	// RoundTrip is, when a lock kept by auto-extension was granted and
	// then given back because its first extension took longer than
	// Patience (the slowest round trip over which its extensions land
	// with AutoExtendLead of the validity left), how long that extension
	// took: the nodes answer too late for the ttl. Zero otherwise.
	RoundTrip time.Duration
	// Cause is the context's error when the context ended the wait, what
	// stopped the fencing phase, the nodes' refusal of a request to the
	// client's user (an ACL), which no retry can get past (wrapping
	// ErrInvalid), or why a lock kept by auto-extension, granted, ended
	// before the first extension that Lock waited for (ErrLost,
	// ErrExpired, ErrClosed); else nil.
	Cause error
}

// Count returns how many nodes had outcome o in the last attempt.
func (e *AcquireError) Count(o Outcome) int { return countOutcome(e.Nodes, o) }

func countOutcome(rs []NodeResult, o Outcome) int {
	n := 0
	for _, r := range rs {
		if r.Outcome == o {
			n++
		}
	}
	return n
}

// noQuorum reports whether so many nodes failed or timed out that the
// others, answered or not waited for, are fewer than a quorum: then the
// nodes are unreachable, not merely held by another client. Nodes the
// attempt did not wait for (NoReply) count as reachable.
func (e *AcquireError) noQuorum() bool {
	return len(e.Nodes) > 0 && len(e.Nodes)-e.Count(Failed)-e.Count(TimedOut) < e.Quorum
}

// outcome classifies the failed attempt for observers.
func (e *AcquireError) outcome(ctx context.Context) AttemptOutcome {
	switch {
	case ctx.Err() != nil:
		return AttemptCanceled
	case e.Validity != 0:
		return AttemptTooLate
	case e.Fence != nil || e.Cause != nil:
		return AttemptFenceFailed
	case e.noQuorum():
		return AttemptNoQuorum
	}
	return AttemptContended
}

// Error names the resource, the reason and each node that did not grant it.
func (e *AcquireError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: lock %q not acquired", e.Resource)
	switch {
	case e.Cause != nil:
		fmt.Fprintf(&b, " (%v after %d attempt(s))", e.Cause, e.Attempts)
	case e.Validity != 0:
		fmt.Fprintf(&b, " (quorum reached too late: validity %v)", e.Validity)
	case e.RoundTrip > 0:
		fmt.Fprintf(&b, " (granted, then given back: its first extension took %v, too slow for the lock to be kept)", e.RoundTrip.Round(time.Millisecond))
	case e.Fence != nil:
		fmt.Fprintf(&b, " (fencing phase: %d of %d nodes confirmed the token, %d needed)", countOutcome(e.Fence, Acquired), len(e.Fence), e.Quorum)
	case e.noQuorum():
		fmt.Fprintf(&b, " (no quorum possible: %d of %d nodes failed or timed out, %d needed)", e.Count(Failed)+e.Count(TimedOut), len(e.Nodes), e.Quorum)
	default:
		fmt.Fprintf(&b, " (held elsewhere: %d of %d nodes granted, %d needed)", e.Count(Acquired), len(e.Nodes), e.Quorum)
	}
	sep := ": "
	rs := e.Nodes
	if e.Fence != nil && e.Cause == nil && e.Validity == 0 {
		// Every node of phase 1 that counted granted: what stopped the
		// lock is the fencing phase's nodes (a node error such as an
		// ACL's NOPERM among them).
		rs = e.Fence
	}
	for _, r := range rs {
		if r.Outcome == Acquired {
			continue
		}
		b.WriteString(sep)
		sep = ", "
		b.WriteString(r.Node)
		b.WriteString(" ")
		b.WriteString(r.Outcome.String())
		if r.Err != nil && r.Outcome != TimedOut {
			fmt.Fprintf(&b, " (%v)", r.Err)
		}
	}
	switch {
	case e.RoundTrip > 0 && e.TTL > 0:
		fmt.Fprintf(&b, "; the nodes answered in %v, over %v, the slowest round trip over which a lock of ttl %v is kept by auto-extension with a third of the ttl left at each extension: nodes that answer this late need a longer ttl (more than %.1fx their round trip)",
			e.RoundTrip.Round(time.Millisecond), e.Patience.Round(time.Millisecond), e.TTL, float64(e.TTL)/float64(e.Patience))
	case e.Patience > 0 && e.TTL > 0:
		fmt.Fprintf(&b, "; nodes timed out after %v, the longest a lock of ttl %v waits for a slow node and can still be kept once granted: nodes that answer later need a longer ttl (more than %.1fx their round trip)",
			e.Patience.Round(time.Millisecond), e.TTL, float64(e.TTL)/float64(e.Patience))
	}
	return b.String()
}

// Unwrap gives ErrNotAcquired, ErrNoQuorum when it applies, and the cause.
func (e *AcquireError) Unwrap() []error {
	errs := []error{ErrNotAcquired}
	if e.noQuorum() {
		errs = append(errs, ErrNoQuorum)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}
