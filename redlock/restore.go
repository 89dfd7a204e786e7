package redlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	l.mu.Lock()
	if l.released || l.err != nil {
		l.mu.Unlock()
		return 0, time.Now(), false
	}
	l.restoring++
	l.restores.Add(1)
	l.mu.Unlock()
	c := l.client
	req := l.restoreRequest()
	f := c.newFan(ctx, ctx, req, stopAll)
	if f == nil {
		l.restored()
		return 0, time.Now(), false
	}
	rc := &restoreCall{forgot: make([]bool, len(c.nodes))}
	for _, r := range replies {
		rc.forgot[r.i] = r.refused()
	}
	if nodes := c.infoNodes(); nodes != nil {
		rc.nodes, rc.marker = nodes, c.releaseMarker(l.value)
	}
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

func (rc *restoreCall) call(f *fan, i int) (bool, error) {
	if !rc.forgot[i] {
		return false, nil
	}
	if rc.nodes != nil {
		_, ok, err := rc.nodes[i].Note(f.nctx, rc.marker)
		if err != nil {
			return false, err
		}
		if ok {
			rc.marked.Store(true)
			return false, nil
		}
	}
	if f.req.Op == opRestoreAll {
		// A set's restore: MultiNode.RestoreAll, which every node of a
		// client that locked a set has (LockAll checks).
		n, ok := f.c.nodes[i].(adapter.MultiNode)
		if !ok {
			return false, invalidf("node %q does not implement adapter.MultiNode", f.c.names[i])
		}
		return n.RestoreAll(f.nctx, f.req.Keys, f.req.Value, f.req.TTL)
	}
	return do(f.nctx, f.c.nodes[i], f.req)
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
// (markerTTL of ttl), before another's release of it (ForceRelease, a
// handle's Release), and returns each node's error (nil where kept).
func (c *Client) markReleased(ctx context.Context, nodes []adapterInspect, value string, ttl time.Duration) []error {
	key, errs := c.releaseMarker(value), make([]error, len(nodes))
	c.onEveryNode(ctx, nodes, func(ctx context.Context, i int, n adapterInspect) {
		errs[i] = n.PutNote(ctx, key, "released", c.markerTTL(ttl))
	})
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

// restored ends a restore that restore began.
func (l *Lock) restored() {
	l.mu.Lock()
	l.restoring--
	l.mu.Unlock()
	l.restores.Done()
}
