package redlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
)

// An extension restores the key on the nodes that forgot it. A node that
// restarts without persistence comes back empty (R16.1); an extension,
// which only extends keys that still hold the value (R17), then finds it
// gone there, and after a rolling restart of the nodes (one at a time, each
// down past the ttl, a quorum alive throughout) too few nodes hold it for
// an extension to succeed: a healthy lock, or a healthy leadership, would
// end. So when some nodes answer an extension with "not held", the extended nodes and they
// would make up a quorum, those nodes are a minority (at most
// N minus the quorum: keys gone from more nodes than that mean the lock
// was lost, and the extension says ErrNotHeld as before), and the lock's
// validity has not passed, the client sets the key again with its value by
// SET NX PX on every node that answered "not held" (unless the node keeps
// a release marker: below), before the validity ends, and counts each node
// where it was set as confirming (when a quorum had confirmed already, the
// restore only brings the forgetting nodes back before another one goes).
// Every kind of lock is restored so: a lock or a writer by SET NX PX, a
// reader by joining the readers' hash (adapter.RWNode.RAcquire), which
// refuses where a writer holds the key or waits for it (its mark), so that
// a restore never admits a reader that a writer's mark keeps out; and a
// set by adapter.MultiNode.RestoreAll, which sets every key of the set
// only if each is missing or holds the lock's own value already. A node
// can forget part of a set: a Redis Cluster node whose masters restart one
// at a time loses the keys of one master's slots and keeps the others
// (the set's extension there is stepped per slot, so it keeps extending
// them). The set's acquisition step (only if no key exists) would refuse
// such a node for ever, since the lock's own keys exist on it, and the
// next node of the rolling restart would end the lock.
//
// Why this is safe: until the validity (Until) no other client can hold
// the lock, so no other client holds a quorum of the key: a key of another
// client on a node can only be that of a failed or in-flight attempt, and
// SET NX never overwrites it (nor this client's own key where it is still
// held). The same holds for every key of a set: RestoreAll changes nothing
// on a node (on a cluster node, in a slot) where any key of the set holds
// another value, and elsewhere writes only what is missing or this lock's
// own value again, with a new expiry from after the extension's T1, as an
// extension of those keys would; and for a reader, whose share excludes writers and
// plain locks only, as the readers' hash does on every node that holds it:
// no writer or plain lock holds a quorum until the validity, and RAcquire
// joins only a free key or a hash of readers. A key set by this client before Until is one more node holding the
// lock's value, exactly as after an acquisition attempt of its own (R3), and
// it lives a ttl from its setting, after the extension's T1. The extension
// never takes a node from anyone: where another client's key is, the
// restore fails there and the extension fails as before. The extension
// then counts its confirmations as R17 does, with its T2 at the last
// restoring answer; a restore that ends after Until confirms nothing.
// Nothing here re-creates a key after the lock ended: an expired, released
// or lost lock is never extended (doExtend returns ErrNotHeld first), and
// an extension that raced an Unlock does not restore. That case looks, to
// the extension, exactly like forgetting nodes: on a minority the release
// came first ("not held"), on the others the extension did. So a restore
// begins only while the lock is not released, checked under the lock's
// mutex after the extension's answers (a "not held" caused by this lock's
// release comes after Unlock marked it released); and Unlock, which marks
// it under the same mutex, waits for every request of a restore that began
// before it, then releases on every node, so that no restored key
// outlives the release.
//
// A node whose answer always comes after the nodes of the quorum (a Redis
// Cluster node beside plain masters: its round trips are longer; a slower
// machine) says "not held" after the extension's decision, when the
// extension has succeeded and its caller has gone on. It is restored all
// the same, or it never would be, and the next node of a rolling restart
// would end the lock. So an extension's requests outlive its caller's
// context (not its deadline, and never Close: newExtensionFan), the fan
// keeps the nodes that answer "not held" after its decision (lateAnswers),
// and once every node answered, a successful extension restores those
// nodes in the background (restoreLate), on the terms above: only while
// the lock is neither released nor ended and its validity has not passed,
// only on the nodes that answered "not held", and there only without a
// release marker (below), with Unlock waiting for it as for any restore.
// Its outcome changes nothing of the extension's, which was decided
// before: a restored node is one more node holding the lock's value, and
// a release marker found ends the lock (ErrLost, ErrNotHeld), as the
// extension would have failed had the answer come in time. The extension
// holds at most a minority that said "not held" (a quorum extended it), so
// these are forgetting nodes, as at the decision.

// restore sets l's key with its value on every node that answered the
// extension "not held" (replies) where it is free (SET NX PX; a reader's
// share, a set's missing keys: restoreRequest), unless the node keeps a release
// marker of the value (below), and returns how many nodes set it, the time
// of the deciding answer, and whether a node kept a marker: the lock was
// released by another, and the extension must not succeed. Keys set on a
// node after the decision are left to expire, or to the next extension, as
// the late answers of an extension are. It sets nothing, and returns 0,
// once the lock was released or ended.
func (l *Lock) restore(ctx context.Context, replies []reply) (int, time.Time, bool) {
	if !l.beginRestore() {
		return 0, time.Now(), false
	}
	c := l.client
	req := l.restoreRequest()
	f := c.newFan(ctx, ctx, req, stopAll)
	if f == nil {
		l.restored()
		return 0, time.Now(), false
	}
	forgot := make([]bool, len(c.nodes))
	for _, r := range replies {
		forgot[r.i] = r.refused()
	}
	rc := c.newRestoreCall(forgot, l.value)
	f.by = rc
	c.send(f)
	_, t := f.await()
	f.settle(false, false) // never released: the other nodes hold this value
	// Every request answered (each bounded by the node timeout), so that
	// an Unlock that waits for this restore releases after all of them.
	f.answeredAll(context.Background())
	l.restored()
	n := 0
	for _, r := range f.replies() {
		if !r.none && r.err == nil && r.ok {
			n++
		}
	}
	return n, t, rc.marked.Load()
}

// A release by another than the holder (an operator's ForceRelease, or
// Client.Release of the lock's handle in another process) that races the
// holder's extension looks to the extension exactly like forgetting
// nodes: where the release came first the node answers "not held". The
// lock's own Unlock is told apart by the lock's state (above); another
// process's release leaves a marker instead: before it deletes the value
// on a node, it keeps there a note under a digest of the value
// (releaseMarker) for longer than the holder's restore can come
// (markerTTL). The restore asks only the nodes that answered "not held",
// and reads the marker on each before it sets the key: where the release
// caused that answer, the marker was written before it, so the restore
// finds it, sets nothing there, and the extension fails with ErrNotHeld.
// A node that answered "extended" is not restored: the release may reach
// it after the extension, and a restore there could come after both. A
// node that forgot the key by a restart keeps no marker and is restored
// as before. Without notes (WithInfoPrefix empty or overlapping the key
// prefix, or a node that is no adapter.InspectNode), no marker is written
// or read, and such a release can still be undone by a racing restore.

// errReleasedByAnother says why an extension that found a release marker
// fails (with ErrNotHeld).
var errReleasedByAnother = errors.New("redlock: the lock was released by another process (a forced release, or a release of its handle)")

// restoreCall runs a restore on node i (a nodeCall): only where the node
// answered "not held" (forgot), and there only without a release marker.
type restoreCall struct {
	forgot []bool
	nodes  []adapterInspect // nil: no markers
	marker string
	marked atomic.Bool // a node kept a release marker of the value
}

// newRestoreCall is the restore call of the lock with value on the nodes
// that forgot it, reading the release markers where the client keeps
// notes.
func (c *Client) newRestoreCall(forgot []bool, value string) *restoreCall {
	rc := &restoreCall{forgot: forgot}
	if nodes := c.infoNodes(); nodes != nil {
		rc.nodes, rc.marker = nodes, c.releaseMarker(value)
	}
	return rc
}

func (rc *restoreCall) call(f *fan, i int) (bool, error) { return rc.on(f.nctx, f.c, f.req, i) }

// on runs the restore req on c's node i, bounded by ctx.
func (rc *restoreCall) on(ctx context.Context, c *Client, req adapter.Request, i int) (bool, error) {
	if !rc.forgot[i] {
		return false, nil
	}
	if rc.nodes != nil {
		_, ok, err := rc.nodes[i].Note(ctx, rc.marker)
		if err != nil {
			return false, err
		}
		if ok {
			rc.marked.Store(true)
			return false, nil
		}
	}
	if req.Op == opRestoreAll {
		// A set's restore: MultiNode.RestoreAll, which every node of a
		// client that locked a set has (LockAll checks).
		n, ok := c.nodes[i].(adapter.MultiNode)
		if !ok {
			return false, invalidf("node %q does not implement adapter.MultiNode", c.names[i])
		}
		return n.RestoreAll(ctx, req.Keys, req.Value, req.TTL)
	}
	return do(ctx, c.nodes[i], req)
}

// releaseMarker is the key of the release marker of the lock with value:
// a digest of the value, as extNote's, so that its name says nothing of
// the value.
func (c *Client) releaseMarker(value string) string {
	sum := sha256.Sum256([]byte(value))
	return c.opts.infoPrefix + "rel:" + hex.EncodeToString(sum[:16])
}

// markerTTL is how long a release marker is kept: a restore that undoes
// a release reads it within two of the holder's node timeouts after the
// extension began, which began before the release ended (else it finds
// the lock gone from more than a minority and restores nothing); node
// timeouts are below the ttl, so twice the lock's ttl (ttl) and the
// release's own bound cover it.
func (c *Client) markerTTL(ttl time.Duration) time.Duration {
	return 2*ttl + c.opts.releaseTimeout
}

// markReleased keeps the release marker of value on every node of nodes
// (markerTTL of ttl), before a release of it that another process's
// extension may race (a handle's Release, the Unlock of a lock that
// crossed processes), and returns each node's error (nil where kept). It
// waits for each node as the release of a lock of ttl after it will
// (timeout.go: slowWait): up to the release's patience for a node that is
// slow for it, else the release timeout (within the node timeout's
// limit). A node that is slow but not answering (a new client never met
// it, or it is on probation: it timed out, and has not answered late
// since; timeout.go: answering) is waited for so until a quorum kept the
// marker, and then the release timeout more at most: one as slow as the
// quorum's nodes has answered by then, and one frozen since the client's
// start, or since its last answer, costs no more than a known node. A
// quorum of markers is what keeps a racing extension from a quorum; a
// marker given up on a healthy slow node would be missing there, where the
// release lands all the same.
func (c *Client) markReleased(ctx context.Context, nodes []adapterInspect, value string, ttl time.Duration) []error {
	key, errs := c.releaseMarker(value), make([]error, len(nodes))
	born := time.Since(c.born)
	patience, unmet := c.slowWait(adapter.Request{Op: adapter.OpRelease, TTL: ttl}, born)
	short := min(c.opts.releaseTimeout, timeoutLimit(c.opts.nodeTimeout, 0))
	quorum := make(chan struct{}) // closed once a quorum kept the marker
	var mu sync.Mutex
	kept := 0
	var wg sync.WaitGroup
	for i, n := range nodes {
		wait, unknown := short, false
		if patience > short && c.slow[i].slowFor(born, unmet) {
			wait, unknown = patience, !c.slow[i].answering(born)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			mctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			if unknown {
				go func() {
					select {
					case <-quorum:
					case <-mctx.Done():
						return
					}
					t := time.NewTimer(short)
					defer t.Stop()
					select {
					case <-t.C:
						cancel()
					case <-mctx.Done():
					}
				}()
			}
			errs[i] = n.PutNote(mctx, key, "released", c.markerTTL(ttl))
			if errs[i] == nil {
				mu.Lock()
				if kept++; kept == c.quorum {
					close(quorum)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// opRestoreAll is the restore of a set (adapter.MultiNode.RestoreAll),
// which only restoreCall carries.
const opRestoreAll adapter.Op = 218

// restoreRequest is the request of a restore: l's own acquisition step,
// of its key or its reader's share, and for a set its restore
// (opRestoreAll), which sets the keys a node forgot beside those it kept.
func (l *Lock) restoreRequest() adapter.Request {
	op := adapter.OpAcquire
	switch {
	case l.mode == modeRead:
		op = adapter.OpRAcquire // rw.go
	case l.keys != nil:
		op = opRestoreAll
	}
	return adapter.Request{Op: op, Key: l.key, Keys: l.keys, Value: l.value, TTL: l.ttl}
}

// beginRestore begins a restore, unless the lock was released or ended:
// then it reports false, and nothing may be restored.
func (l *Lock) beginRestore() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released || l.err != nil {
		return false
	}
	l.restoring++
	l.restores.Add(1)
	return true
}

// restored ends a restore that beginRestore began.
func (l *Lock) restored() {
	l.mu.Lock()
	l.restoring--
	l.mu.Unlock()
	l.restores.Done()
}

// newExtensionFan readies the fan of an extension, req, with the caller's
// ctx: its requests outlive ctx's cancellation (the auto-extender cancels
// its context as the extension returns), so that a node answering after
// the decision is heard (lateAnswers), but not ctx's deadline, which bounds
// them as before, nor Close, which ends them (cutBackAtClose). It returns
// nil, and starts nothing, when the client is closed.
func (c *Client) newExtensionFan(ctx context.Context, req adapter.Request) *fan {
	a := &lateAnswers{}
	base := context.WithoutCancel(ctx)
	f := c.newFan(ctx, base, req, stopQuorum)
	if f == nil {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && dl.Before(f.rc.deadline()) {
		f.rc.init(base, f.t1, dl.Sub(f.t1))
	}
	c.cutBackAtClose(f, 0)
	a.notHeld = a.buf[:0]
	if n := len(c.nodes); n > len(a.buf) {
		a.notHeld = make([]bool, 0, n)
	}
	a.notHeld = a.notHeld[:len(c.nodes)]
	f.late = a
	return f
}

// lateAnswers is what an extension's fan hears after its decision: which
// nodes answered "not held" then, for restoreLate.
//
// Such an answer teaches the client nothing of its nodes' timing (when it
// last heard a node, the round-trip sample, a node answering after the
// limit: timeout.go) once the extension's caller's context has ended:
// before the requests outlived their caller, such an answer never came
// (the request ended with the context), and the slow-node heuristics must
// learn what they learnt then. Fed to them, the answers of a slow node to
// every auto-extension (which cancels its context as the extension
// returns, at the quorum) kept the node slow for good, so that every
// contended grant waited for it up to its patience: torture's slow-node
// scenario then broke its liveness bound 3 runs of 4, against 1 of 4. An
// answer that comes while the caller's context lives (an Extend whose
// caller waits on) is taught as before.
type lateAnswers struct {
	notHeld []bool // by node, under the fan's mu
	buf     [7]bool
}

// keep takes node i's answer r to f after f's decision, with f.mu held,
// and reports whether it is kept apart from the timing (above).
func (a *lateAnswers) keep(f *fan, i int, r reply) bool {
	if r.refused() {
		a.notHeld[i] = true
	}
	return f.ctx.Err() != nil
}

// restoreLate restores l on the nodes whose "not held" answer to its
// extension f, which succeeded, came after f's decision (above): in the
// background, counted in the client's background work, once every node
// answered f (each request bounded by its node timeout, its caller's
// deadline, and Close), and within the lock's validity. The caller never
// waits for it.
func (l *Lock) restoreLate(f *fan) {
	pending := false
	for _, r := range f.replies() {
		pending = pending || r.none
	}
	c := l.client
	if !pending || !c.bgAdd(1) {
		return
	}
	go func() {
		defer c.bg.Done()
		l.mu.Lock()
		until := l.until
		l.mu.Unlock()
		ctx, cancel := context.WithDeadline(context.WithoutCancel(f.ctx), until)
		defer cancel()
		// Close ends the extension's requests (cutBackAtClose), so this
		// wait; no restore starts once Close began.
		if !f.answeredAll(ctx) || c.closing() {
			return
		}
		forgot, some := make([]bool, len(c.nodes)), false
		f.mu.Lock()
		for i, no := range f.late.notHeld {
			forgot[i], some = no, some || no
		}
		f.mu.Unlock()
		if !some {
			return
		}
		// Each restoring request gets as long as the extension's had,
		// and Close ends them, as it ends the extension's.
		go func() {
			select {
			case <-c.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if !l.restoreOn(ctx, forgot, f.rc.deadline().Sub(f.t1)) {
			return
		}
		// Another released the lock (ForceRelease, Client.Release of its
		// handle): it is not held, however many extended.
		l.mu.Lock()
		l.gone = true
		l.mu.Unlock()
		l.lose(errors.Join(ErrLost, ErrNotHeld, errReleasedByAnother))
	}()
}

// restoreOn restores l on the nodes that forgot it, as restore does, each
// request bounded by bound and ctx, and reports whether a node kept a
// release marker of the lock. It is restore without a fan: its answers,
// like the late answers that called for it, teach the client nothing of
// its nodes' timing (lateAnswers), and nothing waits for them but Unlock.
func (l *Lock) restoreOn(ctx context.Context, forgot []bool, bound time.Duration) bool {
	if ctx.Err() != nil || !l.beginRestore() { // the validity passed, or Close; or released
		return false
	}
	defer l.restored()
	c := l.client
	rc, req := c.newRestoreCall(forgot, l.value), l.restoreRequest()
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var wg sync.WaitGroup
	for i, yes := range forgot {
		if yes {
			wg.Go(func() { _, _ = rc.on(ctx, c, req, i) })
		}
	}
	wg.Wait()
	return rc.marked.Load()
}
