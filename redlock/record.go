package redlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"dlm/redlock/adapter"
)

// DefaultRecordPrefix is the default prefix of the record keys
// (WithRecordPrefix).
const DefaultRecordPrefix = "dlm:record:"

// ErrRecordFailed is returned by Lock.PutRecord when errors or timeouts
// kept a quorum of nodes from confirming the record. The lock itself is not
// affected, and PutRecord may be tried again.
var ErrRecordFailed = errors.New("redlock: record not stored by a quorum")

// WithRecordPrefix sets the prefix of the record keys (Lock.PutRecord,
// Client.ReadRecords): the record of resource r is kept under prefix+r.
// Default "dlm:record:". Neither it nor the lock key prefix (nor, with
// WithFencing, the fence key prefix) may be a prefix of the other.
func WithRecordPrefix(p string) Option {
	return clientOption(func(o *clientOptions) { o.recordPrefix = p })
}

// Fencing reports whether the client was built WithFencing, so that its
// locks carry fencing tokens (R18).
func (c *Client) Fencing() bool { return c.opts.fencing }

// RecordRead is one node's answer to Client.ReadRecords.
type RecordRead struct {
	// Node is the node's name.
	Node string
	// OK reports that the node holds a record of the current holder of
	// the lock key: the key exists, and its value is the one the record
	// was stored for.
	OK bool
	// Record is the record when OK, else "".
	Record string
	// Fence is the node's fence value for the resource (R18), 0 when it
	// has none.
	Fence uint64
	// Err is the node's error (a timeout included); the other fields are
	// then zero.
	Err error
}

// recordRead is what one node answered to a record read (recordGet).
type recordRead struct {
	record string
	ok     bool
	fence  uint64
}

// PutRecord publishes record as the lock's public record, readable by any
// client with ReadRecords, without the lock's value (R4: the value stays
// the holder's secret). Each node stores it, in one atomic step, only if
// the lock key still holds the lock's value, bound to a digest of that
// value: a reader gets it only while that value holds the key, never
// after the lock expired, was released or passed to another holder. The
// record key expires with the fence retention (WithFenceRetention; by
// default it is kept, one small key per resource, replaced by each holder
// that publishes). Every node must implement adapter.RecordNode. The lock
// must be on one resource, held by Lock, TryLock, WLock or TryWLock (or
// resumed from one): a lock on a set (LockAll) or a read lock (RLock) is
// refused with ErrInvalid.
//
// PutRecord returns nil when a quorum stored the record within the lock's
// validity; ErrInvalid for a set or a read lock; ErrNotHeld when the lock
// had ended (contacting no node), or too many nodes no longer hold it, or
// the validity passed; else ErrRecordFailed joined with the nodes' errors.
func (l *Lock) PutRecord(ctx context.Context, record string) error {
	if l == nil {
		return ErrNotHeld
	}
	c := l.client
	if err := c.recordCheck(); err != nil {
		return err
	}
	switch {
	case l.keys != nil: // multi.go: no one key holds the value
		return invalidf("PutRecord of lock %q: a lock on a set of resources (LockAll) has no record; publish it under a lock on one resource", l.resource)
	case l.mode == modeRead: // rw.go: readers share the key
		return invalidf("PutRecord of lock %q: a read lock (RLock) has no record, as readers share the key; publish it under Lock or WLock", l.resource)
	}
	if l.bound != nil {
		// The record names this holder and is bound to the value: a
		// hand-over that kept the value would pass the record on with
		// it, to a holder it does not name (handoff_release.go: keep).
		l.bound.Store(true)
	}
	l.mu.Lock()
	until, ended := l.until, l.released || l.err != nil
	l.mu.Unlock()
	if ended || !time.Now().Before(until) {
		return ErrNotHeld
	}
	// The lock's ttl: a slow node is waited for as an extension waits
	// for it (timeout.go); a quorum reached after the validity ended is
	// no success (below).
	f := c.newFan(ctx, ctx, adapter.Request{Op: opPutRecord, Key: l.key, Value: l.value, TTL: l.ttl}, stopQuorum)
	if f == nil {
		return errors.Join(ErrRecordFailed, ErrClosed)
	}
	put := &recordPut{key: c.opts.keyOf(c.opts.recordPrefix, l.resource), record: record}
	put.prev, put.done = l.records.next(len(c.nodes))
	f.by = put
	c.send(f)
	_, t2 := f.await()
	f.settle(false, false)
	stored, notHeld := 0, 0
	var errs []error
	for _, r := range f.replies() {
		switch {
		case r.none:
		case r.err != nil:
			errs = append(errs, nodeError(c.names[r.i], r.err))
		case r.ok:
			stored++
		default:
			notHeld++
		}
	}
	switch {
	case stored >= c.quorum && t2.Before(l.Until()):
		return nil
	case notHeld > len(c.nodes)-c.quorum || !t2.Before(l.Until()):
		return errors.Join(append([]error{ErrNotHeld}, errs...)...)
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(append([]error{ErrRecordFailed}, errs...)...)
}

// ReadRecords asks every node, at once (R15), for the record of the
// current holder of resource's lock (Lock.PutRecord) and its fence value,
// and returns each node's answer in node order, once every node answered
// or the node timeout passed (R8.2). Each answer is that node's state at
// the moment it answered; deciding what a quorum says is the caller's
// (package election does). The error is not nil only for a bad resource
// name, nodes without adapter.RecordNode, a closed client or an ended ctx.
func (c *Client) ReadRecords(ctx context.Context, resource string) ([]RecordRead, error) {
	if resource == "" {
		return nil, invalidf("empty resource name")
	}
	if err := c.recordCheck(); err != nil {
		return nil, err
	}
	// The client's ttl: a slow node is waited for as a grant waits for
	// it (timeout.go), so that a reader over healthy slow nodes hears a
	// quorum; once a quorum answered, only a node that is slow and
	// answering (quorumRead): a node frozen since a new reader's start
	// costs it the node timeout's limit, not a grant's patience.
	f := c.newFan(ctx, ctx, adapter.Request{Op: opReadRecord, Key: c.opts.keyOf(c.opts.prefix, resource), TTL: c.opts.lock.ttl}, stopAll)
	if f == nil {
		return nil, ErrClosed
	}
	f.quorumRead = true
	rr := &recordGet{key: c.opts.keyOf(c.opts.recordPrefix, resource), fenceKey: c.opts.keyOf(c.opts.fencePrefix, resource), reads: make([]recordRead, len(c.nodes))}
	f.by = rr
	c.send(f)
	f.await()
	f.settle(false, false)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]RecordRead, len(c.nodes))
	for _, r := range f.replies() {
		out[r.i].Node = c.names[r.i]
		switch {
		case r.none:
			out[r.i].Err = context.DeadlineExceeded
		case r.err != nil:
			out[r.i].Err = r.err
		default:
			// Written before the answer was taken under f.mu; the nodes
			// that answer late (timed out) are never read here.
			read := rr.reads[r.i]
			out[r.i].OK, out[r.i].Record, out[r.i].Fence = read.ok, read.record, read.fence
		}
	}
	return out, nil
}

// The operations of records' fans, carried by adapter.RecordNode's
// blocking methods (recordPut, recordGet), never by AsyncNode.Start.
const (
	opPutRecord  adapter.Op = 202 + iota // RecordNode.PutRecord
	opReadRecord                         // RecordNode.ReadRecord
)

// recordPut is the nodeCall of PutRecord: store record under key where the
// lock key holds the lock's value, on each node after the lock's previous
// record write there (recordOrder).
type recordPut struct {
	key    string
	record string
	// prev[i] is closed once the lock's previous write to node i returned
	// (nil: none); done[i] is this write's, closed once it returned.
	prev, done []chan struct{}
}

func (p *recordPut) call(f *fan, i int) (bool, error) {
	defer close(p.done[i])
	if prev := p.prev[i]; prev != nil {
		select {
		case <-prev:
		case <-f.nctx.Done():
			// Not sent. The next write waits for this one, so this one
			// still waits for the one before it.
			<-prev
			return false, f.nctx.Err()
		}
	}
	return f.c.nodes[i].(adapter.RecordNode).PutRecord(f.nctx, f.req.Key, p.key, f.req.Value, p.record, f.c.opts.fenceRetention)
}

// recordOrder keeps the record writes of one lock in order on each node: a
// write goes to a node only once the lock's previous write there returned.
// PutRecord returns at a quorum, with its writes to the other nodes still
// on their way; without the order, such a write could land after the next
// PutRecord's on the same node and bring the earlier record back there
// (election: a Leader read right after Proclaim found the old identity on
// a quorum, the nodes Proclaim had not reached yet and those the earlier
// record reached late). The nodes that confirmed a PutRecord then keep its
// record until a later PutRecord of the lock replaces it. A write whose
// request ended before its turn is not sent. The zero value has no writes.
type recordOrder struct {
	mu   sync.Mutex
	tail []chan struct{} // per node: the last write's done, nil before the first
}

// next returns, for a write to n nodes, the channels of the previous write
// (nil where none) and the new write's, which the write closes on each node
// when its call there returned. Every node's call must run (record writes
// grant nothing, so no node is counted out of them: Client.send).
func (o *recordOrder) next(n int) (prev, done []chan struct{}) {
	done = make([]chan struct{}, n)
	for i := range done {
		done[i] = make(chan struct{})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	prev = o.tail
	if prev == nil {
		prev = make([]chan struct{}, n)
	}
	o.tail = done
	return prev, done
}

// recordGet is the nodeCall of ReadRecords: each node's record under key
// and fence under fenceKey, written to reads before the node's answer.
type recordGet struct {
	key      string
	fenceKey string
	reads    []recordRead
}

func (g *recordGet) call(f *fan, i int) (bool, error) {
	rec, ok, fence, err := f.c.nodes[i].(adapter.RecordNode).ReadRecord(f.nctx, f.req.Key, g.key, g.fenceKey)
	g.reads[i] = recordRead{record: rec, ok: ok, fence: fence}
	return ok, err
}

// recordCheck refuses records over nodes without adapter.RecordNode, and a
// record key prefix that overlaps the lock or fence key prefix.
func (c *Client) recordCheck() error {
	for i, n := range c.nodes {
		if _, ok := n.(adapter.RecordNode); !ok {
			return invalidf("node %q (position %d) does not implement adapter.RecordNode, which records need: use an adapter with the record scripts, such as redlock/goredis", c.names[i], i)
		}
	}
	p := c.opts.recordPrefix
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	switch {
	case p == "":
		return invalidf("record key prefix must not be empty")
	case overlap(p, c.opts.prefix):
		return invalidf("lock key prefix %q and record key prefix %q overlap: choose prefixes neither of which starts the other", c.opts.prefix, p)
	case c.opts.fencing && overlap(p, c.opts.fencePrefix):
		return invalidf("fence key prefix %q and record key prefix %q overlap: choose prefixes neither of which starts the other", c.opts.fencePrefix, p)
	}
	return nil
}
