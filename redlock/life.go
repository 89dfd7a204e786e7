package redlock

import (
	"context"
	"dlm/redlock/adapter"
	"errors"
	"slices"
	"sync/atomic"
	"time"
)

// DefaultMaxExtensions is the default bound on a lock's extensions
// (WithMaxExtensions): with the default ttl of 10s and auto-extension every
// ttl/3, about 55 minutes of holding.
const DefaultMaxExtensions = 1000

// WithAutoExtend keeps the lock while it is held: a background goroutine
// extends it (R17) every ttl/3 (WithExtendInterval), retries a failed
// extension until the validity runs out, and closes Done with the reason
// when the lock is lost. It stops on Unlock, on Client.Close and at the
// extension bound (WithMaxExtensions). Default off; Client.Do always turns
// it on. Over nodes so slow that a grant takes more than about a third of
// the ttl, Lock returns after the lock's first extension, and fails, the
// lock given back, when that extension shows the nodes answer too late
// for the extensions to land with AutoExtendLead left (AcquireError.
// RoundTrip): a longer ttl is then what keeps a lock over them.
func WithAutoExtend() SharedOption {
	return sharedOption(func(o *lockOptions) { o.autoExtend = true })
}

// WithExtendInterval sets how often WithAutoExtend extends the lock.
// Default 0: ttl/3. It must be less than the ttl. When the nodes answer
// slowly the extender extends sooner: while the last extension's (or the
// grant's) duration and AutoExtendLead are still left of the validity.
func WithExtendInterval(d time.Duration) SharedOption {
	return sharedOption(func(o *lockOptions) { o.extendEvery = d })
}

// WithMaxExtensions bounds the number of successful extensions of one lock,
// manual (Extend) or automatic: unbounded extension would let one client
// keep a resource forever, which breaks deadlock freedom (R17, R1.2).
// Beyond it Extend returns ErrMaxExtensions, and an auto-extended lock runs
// out at its validity, closing Done with ErrExpired and ErrMaxExtensions.
// Default DefaultMaxExtensions (1000); it must be at least 1.
func WithMaxExtensions(n int) SharedOption {
	return sharedOption(func(o *lockOptions) { o.maxExtensions = n })
}

// validateLife checks the auto-extension settings.
func (o lockOptions) validateLife() error {
	switch {
	case o.maxExtensions < 1:
		return invalidf("max extensions must be at least 1 (extension is always bounded, R17), got %d", o.maxExtensions)
	case o.extendEvery < 0:
		return invalidf("extend interval must be 0 (ttl/3) or positive, got %v", o.extendEvery)
	case o.extendEvery >= o.ttl:
		return invalidf("extend interval %v must be less than the ttl %v, or the lock expires between extensions", o.extendEvery, o.ttl)
	}
	return nil
}

// Done returns a channel that is closed when the lock stops being held:
// Unlock was called, an extension found that too many nodes no longer hold
// the lock, the validity passed without a successful extension, or (for a
// lock with WithAutoExtend) the client was closed. Err then says which. For
// a lock without WithAutoExtend, Done closes at Until (moved by each
// successful Extend) or at Unlock.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if l.err != nil {
			close(l.done)
			l.doneClosed = true
		} else {
			l.expiry = time.AfterFunc(time.Until(l.until), l.expire)
		}
	}
	return l.done
}

// Err returns nil while the lock is held, and afterwards why it is not:
// ErrUnlocked, ErrLost (an extension found the keys gone on too many
// nodes), ErrExpired (the validity passed without a successful extension;
// also with ErrMaxExtensions at the extension bound) or ErrClosed. Test it
// with errors.Is.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil && !time.Now().Before(l.until) {
		return ErrExpired
	}
	return l.err
}

// finish records that the lock stopped being held for reason and closes
// Done. The first reason wins; it reports whether this call was first.
func (l *Lock) finish(reason error) bool {
	if !l.claim(reason) {
		return false
	}
	l.closeDone()
	return true
}

// claim records reason as the end of the lock if it is the first, and
// stops the expiry timer; Done is closed separately (closeDone).
func (l *Lock) claim(reason error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false
	}
	l.err = reason
	if l.expiry != nil {
		l.expiry.Stop()
	}
	return true
}

// closeDone closes Done if it exists and is open.
func (l *Lock) closeDone() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil && !l.doneClosed {
		close(l.done)
		l.doneClosed = true
	}
}

// lose ends the lock for a reason other than Unlock: the observers hear of
// it before Done closes, so that whoever waits on Done finds it reported.
func (l *Lock) lose(reason error) {
	if !l.claim(reason) {
		return
	}
	if len(l.client.obs) > 0 {
		l.client.obs.End(EndEvent{Resource: l.resource, Reason: reason, Held: time.Since(l.granted)})
	}
	l.closeDone()
}

// expire is the expiry timer of a lock without auto-extension: it fires at
// Until, re-arms itself if an Extend moved Until, and otherwise ends the lock.
func (l *Lock) expire() {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	if d := time.Until(l.until); d > 0 {
		l.expiry.Reset(d)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.lose(ErrExpired)
}

// newLock is the lock of the acquisition f, which a quorum granted within
// its validity (client.go: decideAcquire), with o's ttl, the drift d and
// the fencing token (0: none); from is the lock it was handed over from in
// this client, or nil: the new lock continues its chain (runs and
// extensions count on, WithHandoffLimit, R17). Its life begins (life.go:
// grant).
func (c *Client) newLock(f *fan, resource string, o lockOptions, d time.Duration, token uint64, from *Lock) *Lock {
	l := &Lock{
		client:   c,
		resource: resource,
		key:      f.req.Key,
		keys:     f.req.Keys,
		value:    f.req.Value,
		ttl:      o.ttl,
		drift:    d,
		until:    f.t1.Add(o.ttl - d),
		acq:      f,
		token:    token,
		mode:     modeOf(f.req.Op),
	}
	if from != nil {
		l.run = from.run + 1
		l.extensions = from.extensionsDone()
	}
	if c.opts.handoffKeep && l.mode == modeExclusive && l.keys == nil && token == 0 && !c.opts.fencing && !o.valueSet {
		l.bound = new(atomic.Bool) // may be kept by a hand-over (handoff_release.go)
	}
	c.grant(l, o) // auto-extension, Done (life.go)
	return l
}

// modeOf is the mode of a lock granted by an acquisition of op.
func modeOf(op adapter.Op) lockMode {
	switch op {
	case adapter.OpRAcquire:
		return modeRead
	case adapter.OpWAcquire, opWAcquireFenced:
		return modeWrite
	}
	return modeExclusive
}

// grant sets up the lock's life after its grant: the extender of
// WithAutoExtend, tracked by the client's background work.
func (c *Client) grant(l *Lock, o lockOptions) {
	l.granted = time.Now()
	c.noteOwnerIfDue(l.granted, l.Until())
	l.maxExt = o.maxExtensions
	if !o.autoExtend {
		return
	}
	l.every = o.extendEvery
	if l.every == 0 {
		l.every = o.ttl / 3
	}
	l.done = make(chan struct{})
	l.quit = make(chan struct{})
	l.exited = make(chan struct{})
	if l.took() > keepRoundTrip(l.ttl, l.drift) {
		// The extender starts its first extension at once
		// (nextExtension); the call that asked for the lock waits for
		// it (Client.keepable).
		l.confirm = make(chan struct{})
	}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.bg.Add(1)
	}
	c.mu.Unlock()
	if closed {
		close(l.exited)
		l.lose(ErrClosed)
		return
	}
	go l.autoExtend()
}

// noteOwnerIfDue writes the client's owner note (owner.go: noteOwner)
// when a validity granted or extended at at, ending at until, ends after
// what the note written last covers: on a grant or an extension, an atomic
// load, and mostly nothing more.
func (c *Client) noteOwnerIfDue(at, until time.Time) {
	if int64(until.Sub(c.born)) >= c.ownerDue.Load() {
		c.noteOwner(at, until)
	}
}

// stopExtending stops the extender, if any, and waits for it (Unlock).
func (l *Lock) stopExtending() {
	if l.quit == nil {
		return
	}
	l.quitOnce.Do(func() { close(l.quit) })
	<-l.exited
}

// autoExtend is the extender of WithAutoExtend (R17): extend every interval;
// on a failure that may pass (errors, timeouts) retry until the validity
// runs out; on a quorum of nodes that no longer hold the lock, or at the end
// of the validity, close Done with the reason.
func (l *Lock) autoExtend() {
	c := l.client
	defer c.bg.Done()
	defer close(l.exited)
	// confirmed closes confirm, once: the first extension took took (0:
	// none will be made, and the lock runs to its validity).
	confirming := l.confirm != nil
	confirmed := func(took time.Duration) {
		if confirming {
			confirming = false
			l.confirmTook = took
			close(l.confirm)
		}
	}
	t := time.NewTimer(l.nextExtension())
	defer t.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-c.stop:
			l.lose(ErrClosed)
			return
		case <-t.C:
		}
		until := l.Until()
		if !time.Now().Before(until) {
			if l.atBound() {
				l.lose(errors.Join(ErrExpired, ErrMaxExtensions))
			} else {
				l.lose(ErrExpired)
			}
			return
		}
		if l.atBound() {
			confirmed(0)
			t.Reset(time.Until(until))
			continue
		}
		ctx, cancel := context.WithDeadline(context.Background(), until)
		err := l.extend(ctx, true)
		cancel()
		switch {
		case err == nil:
			confirmed(l.took())
			t.Reset(l.nextExtension())
		case errors.Is(err, ErrMaxExtensions), errors.Is(err, ErrInvalid):
			// No extension will be allowed (ErrInvalid: the nodes'
			// facts refuse the ttl): the lock runs to its validity.
			confirmed(0)
			t.Reset(time.Until(until))
		case errors.Is(err, ErrNotHeld):
			select {
			case <-l.quit:
				return // Unlock raced with the extension
			default:
			}
			if time.Now().Before(until) {
				l.lose(errors.Join(ErrLost, err))
			} else {
				l.lose(errors.Join(ErrExpired, err))
			}
			return
		default: // ErrExtendFailed: errors or timeouts; try again soon
			t.Reset(max(time.Millisecond, min(l.every/3, time.Until(until))))
		}
	}
}

// AutoExtendLead is the validity that a lock kept by WithAutoExtend has
// left when an extension lands, at least, while its nodes answer within
// (ttl - drift - AutoExtendLead)/2, about a third of the ttl, and each
// extension is no slower than the one before: a third of the ttl. A
// watchdog that stops the holder's work some margin before Lock.Until, as
// dlm lock's guard does, keeps its margin under it, with room to learn the
// new Until: it then never stops the work of a lock that is kept. Over
// nodes slower than that a lock kept by auto-extension is not granted: a
// grant that took longer returns after the lock's first extension, and
// over nodes that answered it later the lock is given back and Lock fails
// (AcquireError.RoundTrip, Client.keepable). Nodes that turn slower after
// the grant still keep the lock, an extension being waited for up to the
// lock's end, but it then lands with less than the lead left
// (nextExtension).
func AutoExtendLead(ttl time.Duration) time.Duration { return ttl / 3 }

// nextExtension is how long the extender waits before the next extension,
// after a grant or an extension: the interval, or less when the nodes
// answer slowly. The last one took e, from its T1 to now (its validity
// ends at T1 + ttl - drift, so ttl - drift - e is left); the next is
// started while e + AutoExtendLead of the validity is left, so that one
// as slow lands with the lead left. That is possible while ttl - drift -
// 2e >= lead, e up to about a third of the ttl; a slower one is started
// at once and lands with ttl - drift - 2e left (a grant that slow is
// confirmed by that extension, or given back: keepable). With nodes that answer
// within a sixth of the ttl this is the interval (ttl/3), as many
// extensions per ttl as at no latency.
func (l *Lock) nextExtension() time.Duration {
	left := time.Until(l.Until())
	took := l.ttl - l.drift - left
	return max(time.Millisecond, min(l.every, left-took-AutoExtendLead(l.ttl)))
}

// took is how long the lock's grant or last extension took, from its T1
// to now, when called as it lands: its validity, ttl - drift from T1, has
// ttl - drift - took left.
func (l *Lock) took() time.Duration {
	return l.ttl - l.drift - time.Until(l.Until())
}

// keepRoundTrip is the slowest round trip of its nodes over which a lock
// of ttl and drift, kept by auto-extension, lands every extension with
// AutoExtendLead of the validity left: (ttl - drift - lead)/2, about a
// third of the ttl (nextExtension). A grant that took longer has its
// first extension started at once, and Lock waits for it (keepable).
func keepRoundTrip(ttl, drift time.Duration) time.Duration {
	return (ttl - drift - AutoExtendLead(ttl)) / 2
}

// keepable is the last step of an acquisition that granted l (the
// attempt-th attempt), a lock kept by auto-extension whose grant took
// longer than keepRoundTrip: it waits for the lock's first extension,
// which the extender started at once, and returns nil when it took no
// longer than keepRoundTrip, so that the extensions after it land with
// AutoExtendLead left while the nodes are no slower. Otherwise it
// releases l and returns the AcquireError: the nodes answer too late for
// the lock to be kept (RoundTrip, Patience), the lock ended meanwhile, or
// ctx ended first.
//
// A grant's round trip alone cannot tell: a new client's first request
// costs the round trips of its new connections too (two to four of them),
// so a grant over nodes a third as slow may take as long; an extension,
// sent over the connections the grant made, costs the nodes' round trip
// only. Over nodes this slow the extender would start the extension at
// once anyway: waiting for it costs the caller that round trip, and the
// nodes nothing.
func (c *Client) keepable(ctx context.Context, l *Lock, attempt int) error {
	if l.confirm == nil {
		return nil
	}
	select {
	case <-l.confirm:
	case <-l.done:
	case <-ctx.Done():
	}
	took, confirmed := time.Duration(0), false
	select {
	case <-l.confirm:
		took, confirmed = l.confirmTook, true
	default:
	}
	keep := keepRoundTrip(l.ttl, l.drift)
	e := &AcquireError{Resource: l.resource, Attempts: attempt, Quorum: c.quorum}
	if l.acq != nil {
		e.Nodes = l.acq.results()
	}
	switch err := l.Err(); {
	case err != nil:
		e.Cause = err // lost, expired or closed
	case !confirmed:
		e.Cause = ctx.Err()
	case took > keep:
		e.RoundTrip, e.Patience, e.TTL = took, keep, l.ttl
	default:
		return nil
	}
	_ = l.Unlock(ctx) // a ctx that ended bounds nothing: the releases are sent
	return e
}

// atBound reports whether the lock reached its extension bound.
func (l *Lock) atBound() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.extensions >= l.maxExt
}

// Do acquires resource (as Lock, with opts), keeps it with WithAutoExtend,
// runs fn with a context that is cancelled the moment the lock is lost (its
// cause is the lock's Err), then releases it. It returns fn's error joined
// with the loss reason (ErrLost, ErrExpired, ErrClosed) when the lock was
// lost while fn ran, or with Unlock's error when the release found the lock
// no longer held; nil when fn succeeded under the lock throughout. When the
// lock cannot be acquired, fn is not run and the error is Lock's. When fn
// panics, the lock is released first and the panic then goes on up, so a
// panic recovered higher up (as net/http does) leaves no lock behind.
func (c *Client) Do(ctx context.Context, resource string, fn func(ctx context.Context) error, opts ...LockOption) error {
	if fn == nil {
		return invalidf("Do: nil function")
	}
	l, err := c.Lock(ctx, resource, append(slices.Clone(opts), WithAutoExtend())...)
	if err != nil {
		return err
	}
	return l.doFn(ctx, fn)
}

// doFn is Do once the lock l is granted, with auto-extension: it runs fn
// with a context cancelled at the lock's loss, then releases l.
func (l *Lock) doFn(ctx context.Context, fn func(ctx context.Context) error) error {
	fctx, cancel := context.WithCancelCause(ctx)
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-l.Done():
			cancel(l.Err())
		case <-stop:
		}
	}()
	// The lock is given back however fn ends, a panic included (it goes
	// on up once the lock is released): a panic recovered higher up, as
	// net/http does, must not leave the lock held and extended.
	finished := false
	defer func() {
		if !finished {
			close(stop)
			<-watched
			cancel(nil)
			_ = l.Unlock(context.WithoutCancel(ctx))
		}
	}()
	ferr := fn(fctx)
	finished = true
	close(stop)
	<-watched
	cancel(nil)
	l.mu.Lock()
	lost := l.err // nil while held: auto-extension keeps err current
	l.mu.Unlock()
	uerr := l.Unlock(context.WithoutCancel(ctx))
	if lost != nil {
		return errors.Join(ferr, lost)
	}
	return errors.Join(ferr, uerr)
}
