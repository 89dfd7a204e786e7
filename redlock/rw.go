package redlock

import (
	"context"
	"time"

	"dlm/redlock/adapter"
)

// Read-write locks: RLock and WLock over the same quorum as Lock. See the
// package documentation ("Read-write locks") for the argument; the
// per-node step is adapter.RWNode (redlock/scripts/rw.lua).

// opWAcquireFenced is a writer's acquisition on a client with fencing
// (phase 1 of R18, adapter.RWNode.WAcquireFenced); like engine.go's
// opAcquireFenced, it runs by the blocking method only.
const opWAcquireFenced adapter.Op = 232

// acquireWrite runs a fenced writer's acquisition on node i (R18 phase
// 1), reading the node's floor where it has one (fl not nil), as
// fencing.go's acquire does: a writer's grant is repaired as a plain
// lock's.
func (fa *fenceAcquire) acquireWrite(f *fan, i int, fl adapter.FenceFloorNode) (ok bool, fence uint64, kept bool, err error) {
	if fl != nil {
		return fl.WAcquireFencedFloor(f.nctx, f.req.Key, fa.key, fa.floor, f.req.Value, f.req.Waiter, f.req.TTL)
	}
	rn, isRW := f.c.nodes[i].(adapter.RWNode)
	if !isRW { // checkRW checks every node first
		return false, 0, true, invalidf("node %q does not implement adapter.RWNode", f.c.names[i])
	}
	ok, fence, err = rn.WAcquireFenced(f.nctx, f.req.Key, fa.key, f.req.Value, f.req.Waiter, f.req.TTL)
	return ok, fence, true, err
}

// readShape is the shape of RLock and TryRLock (client.go: attempt): a reader
// joins the readers' hash where no writer holds or waits for the key.
// A reader is never fenced: it writes nothing to fence.
type readShape struct{}

func (readShape) ask(_ *Client, t target, value string, o lockOptions) (adapter.Request, nodeCall) {
	return adapter.Request{Op: adapter.OpRAcquire, Key: t.key, Value: value, TTL: o.ttl}, nil
}

// writeShape is the shape of WLock and TryWLock (client.go: attempt): a plain
// lock key where no reader holds the key, else the writer's waiting mark
// (t.waiter); in its fenced form with WithFencing, from the same sequence
// as Lock's (R18).
type writeShape struct{}

func (writeShape) ask(c *Client, t target, value string, o lockOptions) (adapter.Request, nodeCall) {
	req := adapter.Request{Op: adapter.OpWAcquire, Key: t.key, Value: value, Waiter: t.waiter, TTL: o.ttl}
	by := c.fenced(t.resource, nil)
	if by != nil {
		req.Op = opWAcquireFenced // R18: a writer gets a token
	}
	return req, by
}

// releaseOp is the operation that undoes an acquisition of op (R8.5): a
// reader leaves the readers' hash; a writer's key is a plain lock key.
func releaseOp(op adapter.Op) adapter.Op {
	if op == adapter.OpRAcquire {
		return adapter.OpRRelease
	}
	return adapter.OpRelease
}

// doRW runs req, one of RWNode's operations, on n by its blocking method.
func doRW(ctx context.Context, n Node, req adapter.Request) (bool, error) {
	rn, ok := n.(adapter.RWNode)
	if !ok {
		return false, invalidf("node does not implement adapter.RWNode, which %v needs", req.Op)
	}
	switch req.Op {
	case adapter.OpRAcquire:
		return rn.RAcquire(ctx, req.Key, req.Value, req.TTL)
	case adapter.OpRRelease:
		return rn.RRelease(ctx, req.Key, req.Value)
	case adapter.OpRExtend:
		return rn.RExtend(ctx, req.Key, req.Value, req.TTL)
	case adapter.OpWAcquire:
		return rn.WAcquire(ctx, req.Key, req.Value, req.Waiter, req.TTL)
	case adapter.OpWUnwait:
		return rn.WUnwait(ctx, req.Key, req.Waiter)
	case adapter.OpWMark:
		return rn.WMark(ctx, req.Key, req.Waiter, req.TTL)
	}
	return false, invalidf("unknown node operation %v", req.Op)
}

// Shared reports whether the lock is a read lock (RLock, TryRLock), which
// other readers may hold at the same time. It is false for Lock, TryLock,
// WLock and TryWLock.
func (l *Lock) Shared() bool { return l.mode == modeRead }

// readOp is the reader's form of op, for a lock held in read mode: a
// reader leaves or extends its entry in the readers' hash.
func readOp(op adapter.Op) adapter.Op {
	switch op {
	case adapter.OpRelease, adapter.OpReleaseAnnounce:
		return adapter.OpRRelease
	case adapter.OpExtend:
		return adapter.OpRExtend
	}
	return op
}

// RLock acquires resource for reading: any number of readers hold it at
// once, and no writer (WLock) or plain lock (Lock) while they do. It retries
// as Lock does (R10, WithTries) until a quorum of nodes admitted the reader
// within its validity (R8.3, R9). A node admits no new reader while a
// writer waits for the resource there (writer preference, see the package
// documentation), or a plain lock (Lock) that has waited half a ttl, so
// RLock may wait for writers and locks that came after the readers
// holding the resource.
//
// The returned Lock is a read lock (Shared reports true): Extend, Unlock,
// WithAutoExtend, Done and Err work as for Lock; Unlock never hands a read
// lock over to a waiter. Its Token is 0, with WithFencing too: a reader
// writes nothing to fence, and it neither reads nor raises the fence.
// Every node must implement adapter.RWNode (the MemNode of redlocktest,
// redlock/goredis and redlock/rueidis do); otherwise RLock returns an error
// wrapping ErrInvalid that names the node. Errors are Lock's.
func (c *Client) RLock(ctx context.Context, resource string, opts ...LockOption) (*Lock, error) {
	return c.rwLock(ctx, resource, modeRead, false, opts)
}

// TryRLock is RLock with exactly one attempt (R8), as TryLock.
func (c *Client) TryRLock(ctx context.Context, resource string, opts ...LockOption) (*Lock, error) {
	return c.rwLock(ctx, resource, modeRead, true, opts)
}

// WLock acquires resource for writing: exclusively, against readers
// (RLock), other writers and plain locks (Lock) alike, over a quorum (R8).
// On the nodes a writer's key is a plain lock key, so a write lock is a
// plain lock in every respect once granted, and Lock and WLock exclude each
// other. While readers hold the resource, each failed attempt leaves a
// waiting mark on the nodes that readers hold, which keeps new readers out
// until this call acquires or ends (it then removes its marks: a call
// that its context ended returns once they are removed, or at most one
// node timeout after the context's end) or, if the
// process dies, until the marks expire one ttl after its last attempt: a
// stream of readers cannot starve a writer. The marks are refreshed by
// every attempt, so they stay alive while the retry delay (WithRetryDelay)
// is below the ttl, as it is by default.
//
// With WithFencing, the returned Lock's Token is a fencing token (R18),
// from the same sequence as Lock's for the resource: strictly greater than
// the token of every earlier grant of the resource, writer, plain lock or
// set, across restarts of the nodes without persistence and failovers by
// hand too, as Lock's (the writer reads the nodes' fence floor and
// repairs it as Lock does; the writer's key is a plain lock key, so phase
// 2 is Lock's). Without it, Token is 0. Every node must implement adapter.RWNode (see RLock).
// Errors are Lock's.
func (c *Client) WLock(ctx context.Context, resource string, opts ...LockOption) (*Lock, error) {
	return c.rwLock(ctx, resource, modeWrite, false, opts)
}

// TryWLock is WLock with exactly one attempt (R8), as TryLock. It leaves
// no waiting mark: it does not wait.
func (c *Client) TryWLock(ctx context.Context, resource string, opts ...LockOption) (*Lock, error) {
	return c.rwLock(ctx, resource, modeWrite, true, opts)
}

// rwLock is RLock, TryRLock, WLock and TryWLock.
func (c *Client) rwLock(ctx context.Context, resource string, mode lockMode, try bool, opts []LockOption) (*Lock, error) {
	o, err := c.settings(resource, opts)
	if err != nil {
		return nil, err
	}
	if err := c.checkRW(); err != nil {
		return nil, err
	}
	if try {
		o.tries = 1
	}
	return c.rwAcquire(ctx, resource, mode, o)
}

// checkRW refuses read-write locks on a client that cannot give them.
func (c *Client) checkRW() error {
	for i, n := range c.nodes {
		if _, ok := n.(adapter.RWNode); !ok {
			return invalidf("node %q (position %d) does not implement adapter.RWNode, which read-write locks need: use redlock/goredis, redlock/rueidis or redlocktest.MemNode", c.names[i], i)
		}
	}
	return nil
}

// rwAcquire is the retry loop of a read or write lock: attempts (R8) until
// one succeeds, the tries run out, ctx ends or the client closes, with the
// timed random delay of R10 in between (no hand-off queue: the nodes
// announce no reader's release). A writer that may retry draws a waiter id
// once, so that all its attempts refresh the same waiting mark, and removes
// the mark from every node when the call ends, granted or not, once its
// attempts' requests are answered (unwait).
func (c *Client) rwAcquire(ctx context.Context, resource string, mode lockMode, o lockOptions) (*Lock, error) {
	if c.isClosed() {
		return nil, c.stopped(resource, 0, nil, ErrClosed)
	}
	t := c.one(resource)
	t.shape = readShape{}
	if mode == modeWrite {
		t.shape = writeShape{}
	}
	if mode == modeWrite && o.tries != 1 {
		w, err := c.values.next()
		if err != nil {
			return nil, err
		}
		t.waiter = w
	}
	marked := false
	// The call's attempts whose requests are not all answered yet: a
	// mark request on its way would land after the removal of the marks
	// and set one again, for a ttl.
	var open []*fan
	if t.waiter != "" {
		// Close ends the call, which must still remove its marks: Close
		// waits for that (holdSettler), and the removal is sent.
		if !c.holdSettler() {
			return nil, c.stopped(resource, 0, nil, ErrClosed)
		}
		defer func() {
			if marked {
				c.unwait(ctx, t.waiter, open, t.key)
			}
			c.dropSettler()
		}()
	}
	var last *AcquireError
	for try := 1; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, c.stopped(resource, try-1, last, err)
		}
		final := o.tries > 0 && try >= o.tries
		value, err := o.value, error(nil)
		if !o.valueSet { // WithValue (handle.go)
			value, err = c.values.next()
		}
		if err != nil {
			return nil, err
		}
		// A caller's value: wait for every release before the next
		// attempt, as in acquire (client.go).
		l, aerr, f := c.attempt(ctx, t, value, o, final)
		if t.waiter != "" && f != nil {
			open = append(unanswered(open), f)
		}
		if aerr != nil && aerr.Nodes == nil {
			// A closed client sent it to no node.
			return nil, c.stopped(resource, try-1, last, aerr.Cause)
		}
		marked = marked || t.waiter != ""
		if aerr == nil {
			return l, nil
		}
		aerr.Attempts = try
		if err := c.cutShort(ctx, resource, try, last, aerr); err != nil {
			return nil, err // as acquire does (client.go)
		}
		last = aerr
		if final || aerr.Cause != nil {
			return nil, aerr
		}
		if err := c.sleep(ctx, o); err != nil {
			return nil, c.stopped(resource, try, last, err)
		}
	}
}

// unwait removes a writer's waiting mark from every node, once every node
// answered the call's attempts (open), and waits for every node to answer
// the removal: a mark request still on its way would land after the
// removal and leave the mark for a ttl (over redis-server, a request
// written late on another connection). The waits are bounded by the
// release timeout and by ctx, so that readers are admitted again as soon
// as the writer's call returns (Close included: the call holds a settler);
// a mark left on a node that did not answer expires with its ttl. The wait
// ends with ctx; when ctx had already ended (it ended the call), the wait
// is one node timeout (the adaptive bound, timeout.go), so that readers are
// admitted when the call returns wherever the nodes answer, while a frozen
// node delays the call by no more than that. What is still owed then goes
// on in the background, and Close waits for it.
//
// A node that has not answered every attempt yet (frozen, or one the
// client never met, to which a grant gives its patience) is not waited
// for: the removal goes at once, the call waits for a quorum of its
// answers, and the removal is sent again once every attempt was answered,
// in the background (Close waits for it), so that a mark request that
// lands late is removed too.
func (c *Client) unwait(ctx context.Context, waiter string, open []*fan, keys ...string) {
	all := true
	if open = unanswered(open); len(open) > 0 {
		later := append([]*fan(nil), open...)
		if c.settle(false, func() {
			for _, f := range later {
				f.answeredAll(context.Background())
			}
			c.unwaitNow(context.Background(), waiter, false, keys)
		}) {
			open, all = nil, false
		}
	}
	if ctx.Err() != nil || pastDeadline(ctx, time.Now()) {
		// (A deadline past whose timer has not run yet ends the call
		// too: a loaded machine runs timers late.)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), c.nodeTimeout(0))
		defer cancel()
	}
	for _, f := range open {
		if !f.answeredAll(ctx) {
			break // the removal goes all the same
		}
	}
	c.unwaitNow(ctx, waiter, all, keys)
}

// unwaitNow sends the removal of a writer's waiting marks on keys to every
// node, and waits until a quorum removed them, or, with all, until every
// node answered, or ctx ends.
func (c *Client) unwaitNow(ctx context.Context, waiter string, all bool, keys []string) {
	if len(keys) == 1 {
		c.releaseEvery(ctx, adapter.Request{Op: adapter.OpWUnwait, Key: keys[0], Waiter: waiter}, all)
		return
	}
	// A set's marks, one per key, removed together (releaseEvery's steps).
	var fs []*fan
	for _, key := range keys {
		f := c.newFanWithin(ctx, context.Background(), adapter.Request{Op: adapter.OpWUnwait, Key: key, Waiter: waiter}, stopQuorum, c.opts.releaseTimeout)
		if f == nil {
			break
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		return
	}
	c.send(fs...)
	for _, f := range fs {
		f.await()
		if all {
			f.answeredAll(ctx)
		}
		f.settle(false, false)
	}
}

// unanswered returns the fans of fs that some node has not answered yet,
// in fs's storage.
func unanswered(fs []*fan) []*fan {
	out := fs[:0]
	for _, f := range fs {
		f.mu.Lock()
		answered := f.allAnswered.fired
		f.mu.Unlock()
		if !answered {
			out = append(out, f)
		}
	}
	return out
}

// A plain lock behind readers. Readers exclude a plain lock (Lock,
// LockAll of one resource) as they exclude a writer, and a stream of
// readers that overlap would keep it out for ever: its SET NX fails on
// the readers' hash and leaves nothing there. So a Lock call that has
// waited half a ttl since its first failed attempt looks for readers: it
// leaves a writer's waiting mark (WMark) on the nodes where readers hold
// the key, which keeps new readers out. Where it found readers, its
// further attempts are a writer's (writeShape): they refresh the marks
// while readers hold the key and take it once they left, marks and all,
// and the lock granted is a write lock, which is a plain lock on the
// nodes. Where it found none, it looks again every half ttl. The marks are
// removed when the call ends, as a writer's are (unwait). The acquisition
// stays SET NX for every call that waits less than half a ttl or finds no
// reader: such a call pays one WMark per node per half ttl of waiting, and
// nothing when it waits less.
//
// A set (LockAll of several resources) is excluded by readers of any of
// its resources, and leaves its mark on each (one WMark per resource: on a
// node that is a Redis Cluster the keys of a set may sit on different
// masters, and each mark goes to its key's). Its attempts stay a set's
// acquisition, which takes a key that holds only waiting writers' marks
// as it takes a free one (scripts/set_free.lua, as a writer's acquisition
// does); so its marks are refreshed here, every half ttl while readers
// hold a key, rather than by its attempts.

// plainMarks is the waiting mark of one Lock call behind readers.
type plainMarks struct {
	off    bool // no readers possible (nodes without RWNode), or closed
	key    string
	keys   []string      // a set's lock keys (multi.go): a mark on each
	waiter string        // "" until the first mark
	ttl    time.Duration // the marks' expiry
	marked bool          // a mark may be on some node: end removes it
	next   time.Time     // when to look for readers again
	open   []*fan        // fans with requests not all answered
}

// markReaders is called after each failed attempt of a Lock call on *t
// that will retry, with the call's marks so far (nil before the first),
// and returns them; once it found readers it sets t.waiter, so that the
// next attempts are a writer's (exclusive.ask).
func (c *Client) markReaders(ctx context.Context, m *plainMarks, t *target, o lockOptions) *plainMarks {
	now := time.Now()
	if m == nil {
		m = &plainMarks{key: t.key, keys: t.keys, ttl: o.ttl, next: now.Add(o.ttl / 2)}
		m.off = c.checkRW() != nil
		return m
	}
	if m.off || t.waiter != "" || now.Before(m.next) {
		// (A writer's attempts refresh the mark themselves.)
		return m
	}
	if m.waiter == "" {
		w, err := c.values.next()
		// Close ends the call, which must still remove its marks: Close
		// waits for that (holdSettler), and the removal is sent.
		if err != nil || !c.holdSettler() {
			m.off = true
			return m
		}
		m.waiter = w
	}
	var mfs []*fan
	for _, key := range m.markKeys() {
		mf := c.newFan(ctx, ctx, adapter.Request{Op: adapter.OpWMark, Key: key, Waiter: m.waiter, TTL: m.ttl}, stopAll)
		if mf == nil {
			break // closed: Close waits for the removal of what was sent
		}
		mfs = append(mfs, mf)
	}
	if len(mfs) == 0 {
		return m
	}
	c.send(mfs...)
	readers := false
	m.open = unanswered(m.open)
	for _, mf := range mfs {
		mf.await()
		mf.settle(false, false)
		for _, r := range mf.replies() {
			// A node that has not answered may still leave the mark.
			m.marked = m.marked || r.none || r.ok
			readers = readers || (r.ok && r.err == nil)
		}
		m.open = append(m.open, mf)
	}
	m.next = now.Add(m.ttl / 2)
	if readers {
		m.marked = true
		if m.keys == nil {
			t.waiter = m.waiter // a writer's attempts from now on
		}
	}
	return m
}

// markKeys returns the keys the call marks: its key, or each of its
// set's.
func (m *plainMarks) markKeys() []string {
	if m.keys != nil {
		return m.keys
	}
	return []string{m.key}
}

// attempted records the fan f of a writer's attempt of the call (its
// requests may leave a mark until they are answered), granted or not.
func (m *plainMarks) attempted(f *fan) {
	if f != nil {
		m.open = append(unanswered(m.open), f)
	}
}

// endMarks removes the call's marks (unwait) when it may have left one,
// once the call ends, granted or not.
func (c *Client) endMarks(ctx context.Context, m *plainMarks) {
	if m == nil || m.waiter == "" {
		return
	}
	if m.marked {
		c.unwait(ctx, m.waiter, m.open, m.markKeys()...)
	}
	c.dropSettler()
}
