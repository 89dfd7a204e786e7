package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
)

// Lock is a held lock on one resource, or on a set of resources as one
// (Client.LockAll). It is safe for concurrent use: Extend,
// Unlock and the accessors may be called from any goroutine.
//
// The lock is held, at most, until Until (R6, R9): the keys live on a quorum
// of nodes at least that long, provided clocks advance at about the same rate
// (see the package documentation for what a pause or a clock jump does).
type Lock struct {
	client   *Client
	resource string
	key      string
	keys     []string // a set's lock keys, sorted (multi.go); nil for one resource
	value    string
	ttl      time.Duration
	drift    time.Duration
	acq      *fan     // the acquisition that granted it, whose requests may be in flight
	token    uint64   // fencing token (fencing.go), 0 without fencing
	run      int      // hand-overs in a row within the client that led to it
	mode     lockMode // exclusive, or a read or write lock (rw.go)
	// bound is set once the value was bound to something outside the
	// client (Handle, PutRecord), shared by the locks that kept one value
	// (WithHandoffKeep; handoff_release.go: keep); nil where a lock is
	// never kept: without WithHandoffKeep, for a value known outside from
	// the start (WithValue, Resume), sets, read-write locks and fencing.
	bound *atomic.Bool
	// crossed is set once the lock may live on in another process (its
	// Handle was written, or it was resumed from one): its extensions are
	// then counted on the nodes too (bounds.go).
	crossed atomic.Bool
	// records keeps its record writes in order on each node (record.go).
	records recordOrder

	// Life of the lock (life.go), set once at the grant.
	granted  time.Time
	maxExt   int
	every    time.Duration // auto-extension interval, 0 without it
	quit     chan struct{} // auto: closed by Unlock to stop the extender
	quitOnce sync.Once
	exited   chan struct{} // auto: closed when the extender returns
	// confirm: auto, granted slower than keepRoundTrip: closed by the
	// extender after its first extension (Client.keepable), which took
	// confirmTook (0: it was not made: the lock runs to its validity).
	confirm     chan struct{}
	confirmTook time.Duration

	mu         sync.Mutex
	until      time.Time
	passed     bool // kept by another Lock call (WithHandoffKeep): Value and Handle show no value
	released   bool
	extensions int // successful extensions (WithMaxExtensions)
	// gone is set when an extension found too many nodes without the
	// value: whatever Until says, the keys may be free, and a hand-over
	// must not keep the lock (handoff_release.go: keep), even when Unlock had
	// already begun (the extender's answer comes while Unlock waits).
	gone bool
	// restoring counts the restores under way (restore.go), begun only
	// while the lock was not released; Unlock waits for their requests
	// (restores) before it releases, so that none sets a key after it.
	restoring  int
	restores   sync.WaitGroup
	done       chan struct{} // Done; made at the grant (auto) or on demand
	doneClosed bool          // done has been closed
	err        error         // why the lock is no longer held (Err)
	expiry     *time.Timer   // closes Done at Until, without auto-extension
}

// lockMode is what a Lock holds its resource as.
type lockMode uint8

const (
	modeExclusive lockMode = iota // Lock, TryLock
	modeRead                      // RLock, TryRLock: shared with readers
	modeWrite                     // WLock, TryWLock: exclusive
)

// Resource returns the name of the locked resource. For a set (LockAll),
// it returns the set's names, sorted, joined by "," (as in errors and
// events): a name for display; Resources returns the names themselves.
func (l *Lock) Resource() string { return l.resource }

// Value returns the lock's value (R4): the client's tag (6 random bytes,
// drawn once per client) and 20 bytes from crypto/rand, 35 characters
// base64url-encoded, or the caller's (WithValue). A quorum of nodes held it
// under the lock key when the lock was granted (a lock handed over within a
// client included), so it can serve a storage system as a check-and-set
// guard (R18): every lock has a value of its own, unless the client keeps
// locks at hand-overs (WithHandoffKeep), where two holders in a row may
// share one. Reading it changes nothing.
//
// Once Unlock handed the lock over by letting the waiter keep it
// (WithHandoffKeep), this lock's Value returns "", and its Handle carries
// no value: the value is the next holder's alone.
func (l *Lock) Value() string {
	if l.bound == nil {
		return l.value
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.passed {
		return ""
	}
	return l.value
}

// String describes the lock without its value, which is its secret (R4):
// whoever knows it can extend and release the lock, and a value that left
// the client would serve whoever read it (R18). It
// gives the resource, the ttl, the validity that remains and the fencing
// token, if any: %v, %+v and %s print it, %#v too (GoString), and
// log/slog logs the same without the value (LogValue).
func (l *Lock) String() string {
	if l == nil {
		return "redlock lock <nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "redlock lock on %q (ttl %v, validity %v", l.resource, l.ttl, l.Validity())
	if l.token != 0 {
		fmt.Fprintf(&b, ", token %d", l.token)
	}
	b.WriteString("), value redacted")
	return b.String()
}

// GoString is String, so that %#v does not print the value either.
func (l *Lock) GoString() string { return "redlock.Lock{" + l.String() + "}" }

// LogValue gives log/slog the lock without its value (see String).
func (l *Lock) LogValue() slog.Value {
	if l == nil {
		return slog.StringValue("<nil>")
	}
	attrs := []slog.Attr{slog.String("resource", l.resource), slog.Duration("ttl", l.ttl), slog.Duration("validity", l.Validity())}
	if l.token != 0 {
		attrs = append(attrs, slog.Uint64("token", l.token))
	}
	return slog.GroupValue(attrs...)
}

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
// the current time, or zero once it has passed, the lock was released, or
// the lock ended otherwise (Err is not nil: lost, expired, closed).
func (l *Lock) Validity() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released || l.err != nil {
		return 0
	}
	return max(0, time.Until(l.until))
}

// Unlock releases the lock on every node, whether or not the client believes
// it locked that node (R12), with the compare-and-delete script of R5: it
// never deletes a key that holds another value. The releases are sent even
// when ctx is already cancelled or past its deadline; each is bounded by the
// release timeout (WithReleaseTimeout). Unlock returns by ctx's end when
// ctx is live when it is called: the releases still owed then go on in the
// background (Client.Close waits for them) and the error, ErrUnlockFailed
// unless a quorum had answered, also wraps ctx's error. A ctx that had
// already ended, or whose deadline had passed, bounds nothing, so that a
// deferred Unlock after a cancellation still learns the outcome, within
// the release timeout.
// Unlock returns nil when a quorum of nodes deleted this
// lock's key (it does not wait for the slower nodes, whose releases go on in
// the background; Client.Close waits for them); ErrNotHeld when too many
// nodes answered that the key was gone or not this lock's, or when the lock
// had already ended before Unlock (lost, expired, client closed: the error
// then also wraps that reason); otherwise ErrUnlockFailed (errors or
// timeouts), joined with the nodes' errors, and with ErrMaybeLost when a
// node that had granted the lock answered that it no longer held it (the
// lock may have been lost before Unlock). After Unlock the lock is no
// longer held, whatever the result. Unlock on a nil *Lock returns ErrNotHeld,
// so that a deferred Unlock after a failed acquisition is safe.
//
// A lock that may live on in another process (its Handle was taken, or it
// was resumed: Client.Resume) keeps a release marker on every node before
// its release, as Client.Release does, so that that process's extension
// racing the release does not set the key again where the release came
// first: it fails with ErrNotHeld. That costs one note write per node.
//
// When another Lock call of the same client waits for the resource, Unlock
// hands the lock over to it (see WithHandoffLimit and the package
// documentation): Unlock acquires on the waiter's behalf right behind the
// release, or in the same atomic step where the nodes are
// adapter.TransferNodes, and returns once that acquisition is decided; with
// WithHandoffKeep, the waiter may keep this lock as it is instead (no node
// is asked).
func (l *Lock) Unlock(ctx context.Context) error {
	if l == nil {
		return ErrNotHeld
	}
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return ErrNotHeld
	}
	l.released = true
	prior := l.err // the lock ended before Unlock: lost, expired, closed
	if prior == nil && !time.Now().Before(l.until) {
		prior = ErrExpired
	}
	restoring := l.restoring > 0 // no restore begins from now on
	l.mu.Unlock()
	first := l.finish(ErrUnlocked) // Done closes at once (life.go)
	l.stopExtending()
	c := l.client
	// A node that had not answered the acquisition yet may still set the
	// key, unless the nodes keep each node's requests in order
	// (AsyncNode), so that the release reaches a node after the
	// acquisition. Fenced acquisitions use the blocking methods, and
	// read-write acquisitions too (rw.go). The lock was granted by a
	// quorum that answered: those nodes are released at once, and a node
	// whose acquisition request is still under way (frozen, or slow: a
	// new client gives a node it never met a grant's patience) is
	// released again once it answered, in the background (Close waits for
	// it), rather than holding the lock on the quorum meanwhile
	// (followRelease). A lock that a waiter may keep as it is
	// (WithHandoffKeep: bound) waits as before: the second release would
	// delete the waiter's key, which holds the same value.
	// An extension's restore under way may set the key on any node too
	// (restore.go): its requests, in any order with the release's, are
	// waited for.
	wctx := waitingCtx(ctx)
	acquiring := l.acq != nil && (c.async == nil || c.opts.fencing || l.mode != modeExclusive)
	if acquiring && l.bound == nil && !l.acq.answeredNow() && l.followRelease() {
		acquiring = false
	}
	if (acquiring && !l.acq.answeredAll(wctx)) || (restoring && !waitCtx(wctx, &l.restores)) {
		// The caller's context ended first: the release follows the
		// acquisition in the background (Close waits for it).
		if !c.settle(false, func() {
			if acquiring {
				l.acq.answeredAll(context.Background())
			}
			l.restores.Wait()
			l.unlockRest(context.Background(), prior, first)
		}) {
			return errors.Join(ErrUnlockFailed, ErrClosed)
		}
		return errors.Join(ErrUnlockFailed, wctx.Err())
	}
	return l.unlockRest(wctx, prior, first)
}

// followRelease releases l again, on a settler (Close waits for it), on
// each node that had not answered its acquisition when Unlock began, once
// every node answered it, so that a request that reached such a node
// after Unlock's release leaves no key there. It reports false when the
// client is closed (nothing started): Unlock then waits for the
// acquisition's requests itself. The second release deletes only l's
// value (R5): a key set since by another acquisition stays.
func (l *Lock) followRelease() bool {
	c, acq := l.client, l.acq
	acq.mu.Lock()
	var late []int
	for i, got := range acq.got {
		if !got {
			late = append(late, i)
		}
	}
	acq.mu.Unlock()
	req := c.releaseReq(l.request(adapter.OpRelease), true)
	return c.settle(false, func() {
		acq.answeredAll(context.Background())
		var wg sync.WaitGroup
		for _, i := range late {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), c.opts.releaseTimeout)
				defer cancel()
				_, _ = do(ctx, c.nodes[i], req)
			}()
		}
		wg.Wait()
	})
}

// waitingCtx is the context that bounds the waits of a release call
// (Unlock, Release): ctx while it is live, so that the call returns when it
// ends; a context that had already ended before the call bounds nothing
// (the release timeout does), so that a deferred Unlock after a
// cancellation still learns whether the lock was released. So does one
// whose deadline has passed while its timer has not run yet (a loaded
// machine runs timers late).
func waitingCtx(ctx context.Context) context.Context {
	if ctx == nil || ctx.Err() != nil || pastDeadline(ctx, time.Now()) {
		return context.Background()
	}
	return ctx
}

// unlockRest is Unlock from the releases on: ctx bounds the wait for them
// (waitingCtx), never the releases themselves. A hand-over to a waiter of
// this client (handoff.go) runs fans of its own, which no caller's context
// may cut short (the waiter's lock depends on them): when one may happen
// and ctx can end, the rest of Unlock runs on a settler (Close waits for
// it) and the caller returns by ctx's end. Without waiters, no goroutine.
func (l *Lock) unlockRest(ctx context.Context, prior error, first bool) error {
	c := l.client
	if prior == nil && l.mode != modeRead && l.keys == nil && ctx.Done() != nil && c.hand != nil && c.hand.queued(l.key) {
		ch := make(chan error, 1)
		if c.settle(false, func() { ch <- l.unlockFrom(context.Background(), prior, first) }) {
			select {
			case err := <-ch:
				return err
			case <-ctx.Done():
				return errors.Join(ErrUnlockFailed, ctx.Err())
			}
		}
	}
	return l.unlockFrom(ctx, prior, first)
}

// unlockFrom is unlockRest on the caller's goroutine.
func (l *Lock) unlockFrom(ctx context.Context, prior error, first bool) error {
	c := l.client
	hand := handNone
	var err error
	if prior == nil && l.mode != modeRead {
		// Never hand over a lock that is known to be lost: the waiter
		// would start from keys that another client may hold. A reader
		// shares the key: it has nothing to hand over.
		hand, err = c.hand.handOver(l)
	}
	var replies []reply
	if hand != handDone {
		if l.crossed.Load() {
			// The lock may live on in another process (its handle was
			// written, or it was resumed here): that process's extension
			// racing this release must not restore what it deletes.
			c.markReleasedFirst(ctx, l.value, l.ttl)
		}
		replies = c.releaseAll(ctx, l.request(adapter.OpRelease), true)
		err = c.unlockErr(replies)
		if errors.Is(err, ErrUnlockFailed) && l.lostOnGranted(replies) {
			err = errors.Join(ErrMaybeLost, err)
		}
		if err != nil && ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		if c.hand != nil {
			for _, key := range l.lockKeys() {
				if hand == handNone {
					c.hand.ownRelease(key, l.value) // the key may be free: next waiter
				} else {
					c.hand.yielded(key, l.value) // every client's turn (rank)
				}
			}
		}
	}
	if prior != nil {
		err = errors.Join(ErrNotHeld, prior)
	}
	if first && len(c.obs) > 0 {
		e := EndEvent{Resource: l.resource, Reason: ErrUnlocked, Held: time.Since(l.granted), Err: err, Handed: hand == handDone}
		if replies != nil {
			e.Nodes = c.results(replies)
		}
		c.obs.End(e)
	}
	return err
}

// lostOnGranted reports whether a node that granted l (it confirmed the
// acquisition, in time for the decision or after it: fan.granted)
// answered a release among replies that it no longer held l's value. A node that never
// granted l answers so as a matter of course. A lock resumed from a handle
// knows no acquisition: every node counts as having granted it.
func (l *Lock) lostOnGranted(replies []reply) bool {
	for _, r := range replies {
		if r.refused() && (l.acq == nil || l.acq.granted(r.i)) {
			return true
		}
	}
	return false
}

// request is the request of op (OpRelease, OpExtend, ...) for l: on its
// key, or, for a set, op's form on its keys.
func (l *Lock) request(op adapter.Op) adapter.Request {
	if l.mode == modeRead {
		op = readOp(op) // rw.go
	}
	if l.keys != nil {
		op = setOp(op, l.keys) // multi.go
	}
	return adapter.Request{Op: op, Key: l.key, Keys: l.keys, Value: l.value, TTL: l.ttl}
}

// lockKeys returns l's lock keys: its key, or a set's keys.
func (l *Lock) lockKeys() []string {
	if l.keys != nil {
		return l.keys
	}
	return []string{l.key}
}

// releaseAll releases req's key (or a set's keys) from its value on every
// node (R5, R12), announced where the nodes can and announce is set
// (hand-off, R14), and returns each node's reply once a quorum released or
// every node answered. The requests outlive any caller's context, bounded
// by the node timeout; the wait for them ends when ctx ends (waitingCtx).
// req.Op is set here.
func (c *Client) releaseAll(ctx context.Context, req adapter.Request, announce bool) []reply {
	return c.releaseEvery(ctx, c.releaseReq(req, announce), false)
}

// releaseReq is req with releaseAll's operation set.
func (c *Client) releaseReq(req adapter.Request, announce bool) adapter.Request {
	if req.Op != adapter.OpRRelease { // a reader leaves the readers' hash (rw.go)
		op := adapter.OpRelease
		if announce && c.hand != nil {
			op = adapter.OpReleaseAnnounce
		}
		if req.Keys != nil {
			op = setOp(op, req.Keys) // multi.go
		}
		req.Op = op
	}
	return req
}

// releaseEvery sends req, a release of some kind, to every node and returns
// each node's reply once a quorum confirmed or every node answered (with
// all, once every node answered), or once ctx ended (the nodes that had not
// answered are then NoReply). The requests outlive any caller's context,
// bounded by the release timeout, and Close waits for them.
func (c *Client) releaseEvery(ctx context.Context, req adapter.Request, all bool) []reply {
	f := c.newFanWithin(ctx, context.Background(), req, stopQuorum, c.opts.releaseTimeout)
	if f == nil {
		return c.closedReplies()
	}
	c.send(f)
	f.await()
	if all {
		f.answeredAll(ctx) // each request is bounded by the release timeout
	}
	f.settle(false, false)
	return f.replies()
}

// released decides a release fan that is already sent and returns Unlock's
// error for it.
func (c *Client) released(f *fan) error {
	f.await()
	f.settle(false, false)
	return c.unlockErr(f.replies())
}

// unlockErr is Unlock's verdict over the releases' replies: nil when a
// quorum deleted the key; ErrNotHeld when so many answered that the key was
// gone or not this lock's that no quorum can have held it; else
// ErrUnlockFailed. Both are joined with the nodes' errors.
func (c *Client) unlockErr(replies []reply) error {
	released, notHeld := 0, 0
	var errs []error
	for _, r := range replies {
		switch {
		case r.none:
		case r.err != nil:
			errs = append(errs, nodeError(c.names[r.i], r.err))
		case r.ok:
			released++
		default:
			notHeld++
		}
	}
	switch {
	case released >= c.quorum:
		return nil
	case notHeld > len(replies)-c.quorum:
		// A quorum answered that the key is gone or not ours: the lock had
		// expired or been lost before Unlock.
		return errors.Join(append([]error{ErrNotHeld}, errs...)...)
	}
	return errors.Join(append([]error{ErrUnlockFailed}, errs...)...)
}

// closedReplies is the answer of every node to a fan-out of a closed client.
func (c *Client) closedReplies() []reply {
	out := make([]reply, len(c.nodes))
	for i := range out {
		out[i] = reply{i: i, err: ErrClosed}
	}
	return out
}

// Extend resets the lock's ttl on every node that still holds its value
// (R17). It succeeds only if a quorum was extended within the remaining
// validity; then Until moves to T1 + ttl - drift of this extension. It never
// re-creates a key that expired; within the validity it sets the key again
// on a minority of nodes that forgot it, a restart without persistence
// (restore.go), for every kind of lock (a set's keys, a reader's share),
// except where another process released it (ForceRelease, Client.Release
// of its handle): it then returns ErrNotHeld. A node whose "not held"
// comes after a quorum confirmed the extension is restored so too, in the
// background, after Extend returned (a release found then ends the lock:
// Err, Done).
// It returns ErrNotHeld, contacting no node,
// when the validity has already passed, the lock ended or was released (or
// l is nil), and ErrNotHeld when too many nodes no longer hold the value;
// ErrExtendFailed (joined with the nodes' errors) when errors or timeouts
// kept a quorum from confirming, in which case the lock is still held until
// the previous Until.
//
// Extensions are bounded (WithMaxExtensions, R17), across the locks handed
// over within one client as well: beyond the bound Extend returns
// ErrMaxExtensions, contacting no node. Like a lock, an extension is
// refused with ErrInvalid, contacting no node, while a node advertises a
// max ttl below the lock's ttl or two nodes are one server (CheckNodes):
// a node restarted so since the grant; the lock then holds until Until.
func (l *Lock) Extend(ctx context.Context) error {
	if l == nil {
		return ErrNotHeld
	}
	return l.extend(ctx, false)
}

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
	until, ended, bound := l.until, l.released || l.err != nil, l.extensions >= l.maxExt
	l.mu.Unlock()
	if ended || !t1.Before(until) {
		return ErrNotHeld
	}
	if bound {
		return ErrMaxExtensions
	}
	c := l.client
	if err := c.checkExtension(l.ttl); err != nil {
		// A node restarted with a smaller max ttl, or as another
		// node's server, since the lock was granted (nodecheck.go).
		return err
	}
	f := c.newExtensionFan(ctx, l.request(adapter.OpExtend)) // restore.go
	if f == nil {
		return errors.Join(ErrExtendFailed, ErrClosed)
	}
	t1 = f.t1
	c.send(f)
	_, t2 := f.await()
	f.settle(false, false)
	replies := f.replies()
	*out = replies
	extended, notHeld := 0, 0
	var errs []error
	for _, r := range replies {
		switch {
		case r.none:
		case r.err != nil:
			errs = append(errs, nodeError(c.names[r.i], r.err))
		case r.ok:
			extended++
		default:
			notHeld++
		}
	}
	if notHeld > 0 && notHeld <= len(c.nodes)-c.quorum && extended+notHeld >= c.quorum && t2.Before(until) {
		// Nodes that no longer hold the key (a set's keys, a reader's
		// share) forgot it (a restart without persistence): restore
		// it there (restore.go).
		restored, t3, marked := l.restore(ctx, replies)
		if marked {
			// Another released the lock (ForceRelease, Client.Release
			// of its handle): it is not held, however many extended.
			l.mu.Lock()
			l.gone = true
			l.mu.Unlock()
			return errors.Join(append([]error{ErrNotHeld, errReleasedByAnother}, errs...)...)
		}
		if extended < c.quorum {
			t2 = t3 // the restored nodes decide
		}
		extended += restored
		notHeld -= restored
	}
	newUntil := t1.Add(l.ttl - l.drift)
	switch {
	case extended >= c.quorum && t2.Before(until) && validity(l.ttl, t2.Sub(t1), l.drift) > 0:
		l.mu.Lock()
		if l.released || l.err != nil {
			l.mu.Unlock()
			return ErrNotHeld
		}
		if newUntil.After(l.until) {
			l.until = newUntil
		}
		l.extensions++
		count := l.extensions
		l.mu.Unlock()
		// The nodes whose "not held" comes after the decision (restore.go).
		l.restoreLate(f)
		c.noteOwnerIfDue(t2, newUntil) // the note outlives the extended lock (life.go)
		if l.crossed.Load() {
			c.keepOwnerNote(l.value, t2, newUntil) // the acquirer's note too (owner.go)
		}
		if l.crossed.Load() {
			// A lock that crossed processes keeps its count on the
			// nodes, where no handle can reset it (bounds.go).
			if nodes := c.infoNodes(); nodes != nil {
				c.noteExtensions(ctx, nodes, l, count, l.maxExt)
			}
		}
		return nil
	case notHeld > len(c.nodes)-c.quorum:
		l.mu.Lock()
		l.gone = true // never kept (handoff_release.go: keep)
		l.mu.Unlock()
		return errors.Join(append([]error{ErrNotHeld}, errs...)...)
	case !t2.Before(until):
		return errors.Join(append([]error{ErrNotHeld}, errs...)...)
	}
	return errors.Join(append([]error{ErrExtendFailed}, errs...)...)
}

// extensionsDone returns how many times the lock was extended, counting
// the locks it was handed over from (R17).
func (l *Lock) extensionsDone() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.extensions
}

// markReleasedFirst keeps the release marker of value on every node
// before a release of it (restore.go: markReleased), each node waited for
// as the release waits for it, so that an extension of the lock racing the
// release in another process does not restore what it deletes. A node
// that keeps no marker is released all the same; without notes on the
// nodes (WithInfoPrefix) no marker is kept.
func (c *Client) markReleasedFirst(ctx context.Context, value string, ttl time.Duration) {
	nodes := c.infoNodes()
	if nodes == nil {
		return
	}
	c.markReleased(ctx, nodes, value, ttl)
}
