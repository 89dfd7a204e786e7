package redlock

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Observer is told what a client does: every acquisition attempt, every
// extension, and the end of every granted lock. redlock/prometheus turns
// these into metrics; WithLogger into log records. An Observer is called
// synchronously from the goroutine doing the work, possibly from many at
// once: it must be safe for concurrent use, return quickly, and not call
// back into the lock or the client.
type Observer interface {
	// Attempt is called after each acquisition attempt (R8), granted or not.
	Attempt(AttemptEvent)
	// Extension is called after each extension (R17), manual or automatic.
	Extension(ExtensionEvent)
	// End is called exactly once per granted lock, when it stops being
	// held: Unlock, a loss (Done closing), or Client.Close. A lock that is
	// neither unlocked nor watched (no auto-extension, Done never called)
	// ends at its Unlock.
	End(EndEvent)
}

// AttemptOutcome classifies one acquisition attempt.
type AttemptOutcome int

// The outcomes of an acquisition attempt.
const (
	// AttemptAcquired: the lock was granted.
	AttemptAcquired AttemptOutcome = iota
	// AttemptContended: enough nodes answered, but the key was held
	// elsewhere on too many of them.
	AttemptContended
	// AttemptNoQuorum: too few nodes answered for a quorum (errors,
	// timeouts).
	AttemptNoQuorum
	// AttemptTooLate: a quorum was reached but the validity came out not
	// positive (R8.3).
	AttemptTooLate
	// AttemptFenceFailed: phase 1 reached a quorum but too few nodes
	// confirmed the fencing token in time (WithFencing).
	AttemptFenceFailed
	// AttemptCanceled: the caller's context ended the attempt.
	AttemptCanceled
)

// String returns the outcome's name, as used in metric labels.
func (o AttemptOutcome) String() string {
	switch o {
	case AttemptAcquired:
		return "acquired"
	case AttemptContended:
		return "contended"
	case AttemptNoQuorum:
		return "no_quorum"
	case AttemptTooLate:
		return "too_late"
	case AttemptFenceFailed:
		return "fence_failed"
	case AttemptCanceled:
		return "canceled"
	}
	return "unknown"
}

// AttemptEvent describes one acquisition attempt.
type AttemptEvent struct {
	// Resource is the resource name.
	Resource string
	// Outcome is how the attempt ended.
	Outcome AttemptOutcome
	// Elapsed runs from before the first request (T1) to the decision.
	Elapsed time.Duration
	// Validity is the validity computed at the decision (R9), or zero.
	Validity time.Duration
	// Nodes holds each node's outcome and latency in phase 1, in node order.
	Nodes []NodeResult
	// Fence holds each node's outcome in the fencing phase (Acquired: the
	// node confirmed), or nil without fencing or when phase 1 failed.
	Fence []NodeResult
	// Token is the fencing token of a granted fenced lock, else 0.
	Token uint64
	// Handed is true when the lock was handed over by another Lock call
	// of this client as it unlocked (WithHandoffLimit). Nodes is nil when
	// the waiter kept that lock (same value and Until, no node asked;
	// Validity is what it inherited), else the nodes' answers to the
	// acquisition Unlock made on the waiter's behalf.
	Handed bool
	// Resumed is true when the lock was taken over from a handle
	// (Client.Resume): Elapsed and Nodes are zero, and the confirming
	// extension was reported as an ExtensionEvent before.
	Resumed bool
}

// ExtensionEvent describes one extension.
type ExtensionEvent struct {
	// Resource is the resource name.
	Resource string
	// Auto is true for an extension made by WithAutoExtend.
	Auto bool
	// Err is nil when the extension succeeded, else what Extend returned.
	Err error
	// Elapsed is how long the extension took.
	Elapsed time.Duration
	// Nodes holds each node's outcome (Acquired: extended; Held: the node no
	// longer holds the value), or nil when no node was contacted.
	Nodes []NodeResult
}

// EndEvent describes the end of a granted lock.
type EndEvent struct {
	// Resource is the resource name.
	Resource string
	// Reason is why the lock ended: ErrUnlocked, ErrLost, ErrExpired or
	// ErrClosed (possibly joined with more detail; test with errors.Is).
	Reason error
	// Held is how long the lock was held, from its grant.
	Held time.Duration
	// Nodes holds each node's outcome in the release (Acquired: deleted) for
	// an Unlock, else nil.
	Nodes []NodeResult
	// Err is what Unlock returned, for an Unlock.
	Err error
	// Handed is true when Unlock passed the lock to another Lock call of
	// this client (WithHandoffLimit) instead of releasing it: Nodes is nil.
	Handed bool
}

// WithObserver adds an observer of the client's attempts, extensions and
// lock ends. It may be given more than once; each is called in turn.
// Default: none.
func WithObserver(o Observer) Option {
	return clientOption(func(co *clientOptions) {
		if o != nil {
			co.observers = append(co.observers, o)
		}
	})
}

// WithLogger logs the client's attempts and extensions at Debug level and
// its losses, failed extensions and NodeWarnings at Warn level, as
// structured records with attributes (resource, outcome, elapsed,
// nodes...). Default nil: silent.
func WithLogger(l *slog.Logger) Option {
	return clientOption(func(co *clientOptions) {
		if l != nil {
			co.observers = append(co.observers, logObserver{l})
		}
	})
}

// observers fans an event out to every observer.
type observers []Observer

func (os observers) Attempt(e AttemptEvent) {
	for _, o := range os {
		o.Attempt(e)
	}
}

func (os observers) Extension(e ExtensionEvent) {
	for _, o := range os {
		o.Extension(e)
	}
}

func (os observers) End(e EndEvent) {
	for _, o := range os {
		o.End(e)
	}
}

// logObserver is the Observer of WithLogger.
type logObserver struct{ l *slog.Logger }

func nodesAttr(key string, rs []NodeResult) slog.Attr {
	attrs := make([]any, 0, len(rs))
	for _, r := range rs {
		v := r.Outcome.String()
		if r.Err != nil && r.Outcome == Failed {
			v += ": " + r.Err.Error()
		}
		attrs = append(attrs, slog.String(r.Node, v))
	}
	return slog.Group(key, attrs...)
}

func (o logObserver) Attempt(e AttemptEvent) {
	args := []any{slog.String("resource", e.Resource), slog.String("outcome", e.Outcome.String()),
		slog.Duration("elapsed", e.Elapsed), slog.Duration("validity", e.Validity), nodesAttr("nodes", e.Nodes)}
	if e.Fence != nil {
		args = append(args, nodesAttr("fence", e.Fence))
	}
	if e.Token != 0 {
		args = append(args, slog.Uint64("token", e.Token))
	}
	if e.Handed {
		args = append(args, slog.Bool("handed", true))
	}
	if e.Resumed {
		args = append(args, slog.Bool("resumed", true))
	}
	o.l.Debug("redlock: attempt", args...)
}

// NodeWarning logs w at Warn level (NodeWarner).
func (o logObserver) NodeWarning(w NodeWarning) {
	args := []any{slog.String("warning", w.Message)}
	if w.Node != "" {
		args = append(args, slog.String("node", w.Node))
	}
	o.l.Warn("redlock: node setting", args...)
}

func (o logObserver) Extension(e ExtensionEvent) {
	args := []any{slog.String("resource", e.Resource), slog.Bool("auto", e.Auto), slog.Duration("elapsed", e.Elapsed)}
	if e.Nodes != nil {
		args = append(args, nodesAttr("nodes", e.Nodes))
	}
	if e.Err != nil {
		o.l.Warn("redlock: extension failed", append(args, slog.Any("err", e.Err))...)
		return
	}
	o.l.Debug("redlock: extended", args...)
}

func (o logObserver) End(e EndEvent) {
	args := []any{slog.String("resource", e.Resource), slog.Duration("held", e.Held), slog.Any("reason", e.Reason)}
	if e.Err != nil {
		args = append(args, slog.Any("err", e.Err))
	}
	if e.Handed {
		args = append(args, slog.Bool("handed", true))
	}
	level := slog.LevelDebug
	if !errors.Is(e.Reason, ErrUnlocked) || e.Err != nil {
		level = slog.LevelWarn
	}
	o.l.Log(context.Background(), level, "redlock: lock ended", args...)
}
