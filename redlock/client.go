package redlock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
)

// The client and one acquisition, in the order a Lock runs: Client, New
// and Close; Lock and TryLock and their loop (acquire); one attempt
// (target, shape, attempt, decideAcquire); then what they rest on: the
// quorum rule and the validity as pure functions (decide, validity, and
// the quorum of WithByzantineNodes), and the source of lock values
// (valueSource).

// Client acquires locks over N independent Redis masters (R7). It is safe for
// concurrent use; create one per process and share it.
type Client struct {
	nodes  []Node
	async  []adapter.AsyncNode // the nodes, when every one is an AsyncNode (engine.go)
	names  []string
	opts   clientOptions
	quorum int
	values *valueSource
	waits  waiting       // how a Lock call waits between attempts (wait.go)
	hand   *handoff      // nil without hand-off (handoff.go)
	obs    observers     // WithObserver, WithLogger (observer.go)
	stop   chan struct{} // closed by Close: stops the extenders (life.go)

	rmu sync.Mutex
	rng *mrand.Rand
	// lastAttempt is how long this client's latest acquisition attempt
	// took (nanoseconds): the jitter bound of a waiter that has made no
	// attempt of its own yet (wait.go: first).
	lastAttempt atomic.Int64

	// ownerDue is, as time since born, the end of validity up to which
	// the owner note written last covers the client's locks (owner.go).
	ownerDue atomic.Int64

	facts nodeFacts // what CheckNodes read (nodecheck.go)

	rtt rto // the round trips seen, for the node timeout (timeout.go)
	// heard[i] is when node i last answered a request without an error,
	// as time since born, at least 1 (0: never; timeout.go: a node that answers
	// is busy, not failed).
	heard []atomic.Int64
	// slow[i] is what the client knows of node i's slowness: a fan waits
	// past its limit for a node that answers after it (timeout.go).
	slow []slowNode
	born time.Time

	bg sync.WaitGroup // late releases and in-flight requests
	// settlers counts the goroutines that settle what a Lock call left
	// behind (abandon, drop): while one runs, bgAdd lets requests start
	// even after Close began, so that its keys are released (settle).
	settlers int
	mu       sync.Mutex
	closed   bool
	// cuts holds the fans whose requests Close cuts back to their own
	// bound (fan.keep), until they finish: those that wait a patience
	// only for nodes the client never met (timeout.go: slowWait), and
	// extensions, whose requests outlive their caller (engine.go:
	// cutAtClose, cutBackAtClose).
	cuts map[*fan]struct{}
}

// New returns a client over nodes, each an independent master (R2, R7). It
// refuses no nodes, a nil or duplicate node, and any invalid option, with an
// error wrapping ErrInvalid that says what is wrong; and a node that is a
// Redis Cluster with a replica that may promote itself (ErrPromotableReplica,
// replicas.go), which it asks for its replicas, waiting at most the larger
// of 2 s and the node timeout (a node that does not answer is not refused).
func New(nodes []Node, opts ...Option) (*Client, error) {
	o := defaultClientOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.applyClient(&o)
		}
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.releaseTimeout = max(o.releaseTimeout, o.nodeTimeout)
	if len(nodes) == 0 {
		return nil, invalidf("no nodes: Redlock needs independent masters (5 recommended, R7)")
	}
	names := make([]string, len(nodes))
	seen := make(map[string]int, len(nodes))
	for i, n := range nodes {
		if n == nil {
			return nil, invalidf("node %d is nil", i)
		}
		names[i] = nodeName(n, i)
		if j, dup := seen[names[i]]; dup {
			return nil, invalidf("duplicate node %q (positions %d and %d): each node must be an independent master", names[i], j, i)
		}
		seen[names[i]] = i
		for j := 0; j < i; j++ {
			if sameNode(nodes[j], n) {
				return nil, invalidf("duplicate node %q (positions %d and %d): each node must be an independent master", names[i], j, i)
			}
		}
	}
	if !o.ownerSet {
		o.owner = defaultOwner()
	}
	if err := o.checkLayout(nodes); err != nil { // options.go: the key layout
		return nil, err
	}
	if err := o.checkPrefixes(); err != nil { // options.go: the key layout
		return nil, err
	}
	if err := o.validateFencing(nodes, names); err != nil {
		return nil, err
	}
	if err := o.checkReplicas(nodes, names); err != nil { // replicas.go
		return nil, err
	}
	quorum, err := quorumFor(len(nodes), o)
	if err != nil {
		return nil, err
	}
	seed := o.seed
	if !o.seeded {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		seed = binary.LittleEndian.Uint64(b[:])
	}
	values, err := newValueSource()
	if err != nil {
		return nil, err
	}
	// Each cluster node's keys in its own layout (layout.go).
	if nodes, err = o.tagClusters(nodes, names); err != nil {
		return nil, err
	}
	c := &Client{
		nodes:  append([]Node(nil), nodes...),
		async:  asyncNodes(nodes),
		names:  names,
		opts:   o,
		quorum: quorum,
		values: values,
		rng:    mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		obs:    observers(o.observers),
		stop:   make(chan struct{}),
		born:   time.Now(),
		heard:  make([]atomic.Int64, len(nodes)),
		slow:   make([]slowNode, len(nodes)),
	}
	c.waits = c.newWaiting() // handoff.go
	for _, n := range nodes {
		if sn, ok := n.(adapter.SharedNode); ok {
			sn.Share() // closed by the last client's Close
		}
	}
	return c, nil
}

// sameNode reports whether a and b are the same comparable node value.
func sameNode(a, b Node) (same bool) {
	defer func() { _ = recover() }() // non-comparable dynamic types
	return a == b
}

// Nodes returns the names of the client's nodes, in order.
func (c *Client) Nodes() []string { return append([]string(nil), c.names...) }

// Quorum returns the number of nodes an acquisition needs (R8.3).
func (c *Client) Quorum() int { return c.quorum }

// Close ends the client: Lock calls still waiting to retry return at once
// with an error that satisfies errors.Is(err, ErrClosed), auto-extended
// locks end with ErrClosed, and new acquisitions are refused with it. Close
// then waits for the client's background work (releases of failed attempts,
// requests still on the wire) and closes every node that implements
// io.Closer. The same nodes may serve several clients (a client
// WithFencing for an election beside a plain one): a node of the adapters
// (adapter.SharedNode) counts the clients New made over it, and closes
// only with the last of their Close calls.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stop)
	cuts, keeps := make([]*fan, 0, len(c.cuts)), make([]time.Duration, 0, len(c.cuts))
	for f := range c.cuts {
		cuts, keeps = append(cuts, f), append(keeps, f.keep)
	}
	c.mu.Unlock()
	// A request that waits a patience only for a node the client never
	// met (frozen since its start, maybe) ends at its own bound, at once
	// if that passed: what its fan set on that node is released as it
	// answers (Unlock: followRelease; a failed attempt: releaseNode), and
	// a release within its bound still reaches a node that answers in
	// it. An extension's requests, which outlive their caller, end now.
	for _, t := range c.cutBack(cuts, keeps) {
		defer t.Stop()
	}
	for _, n := range c.nodes {
		if sn, ok := n.(adapter.SetupNode); ok {
			sn.AbortSetup() // a hung node's connection is not waited for
		}
	}
	c.bg.Wait()
	c.waits.close()
	var errs []error
	for _, n := range c.nodes {
		if cl, ok := n.(io.Closer); ok {
			errs = append(errs, cl.Close())
		}
	}
	return errors.Join(errs...)
}

// closing reports whether Close began.
func (c *Client) closing() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// bgAdd counts n background goroutines, unless the client is closed: then
// it reports false and the caller starts none. Counting under c.mu keeps Add
// from racing with Close's Wait.
func (c *Client) bgAdd(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed && c.settlers == 0 {
		return false
	}
	c.bg.Add(n) // a settler holds a count: never from zero while Close waits
	return true
}

// settle runs fn on a goroutine counted in c.bg, as a settler (bgAdd): it
// gives back a lock or an attempt that a Lock call left behind. It starts
// fn when the client is open, when another settler runs, or when sure is
// set (the caller knows c.bg is above zero); else it reports false.
func (c *Client) settle(sure bool, fn func()) bool {
	c.mu.Lock()
	if c.closed && c.settlers == 0 && !sure {
		c.mu.Unlock()
		return false
	}
	c.settlers++
	c.bg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.bg.Done()
		fn()
		c.mu.Lock()
		c.settlers--
		c.mu.Unlock()
	}()
	return true
}

// holdSettler counts the caller as a settler (see settle) until
// dropSettler, unless the client is closed: then it reports false. A call
// that leaves state on the nodes which it must clear when it ends (a
// writer's waiting marks, rw.go) holds one, so that Close waits for the
// clearing and the clearing's requests are still sent after Close.
func (c *Client) holdSettler() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.settlers++
	c.bg.Add(1)
	return true
}

// dropSettler ends what holdSettler began.
func (c *Client) dropSettler() {
	c.mu.Lock()
	c.settlers--
	c.mu.Unlock()
	c.bg.Done()
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// settings merges opts over the client's defaults and validates the result.
func (c *Client) settings(resource string, opts []LockOption) (lockOptions, error) {
	o := c.opts.lock
	if len(opts) > 0 {
		o = merged(o, opts)
	}
	if resource == "" {
		return o, invalidf("empty resource name")
	}
	if err := o.validate(c.opts.nodeTimeout); err != nil {
		return o, err
	}
	if err := c.opts.checkTTL(o.ttl); err != nil {
		return o, err
	}
	if err := c.checkAdvertised(o.ttl); err != nil {
		return o, err
	}
	return o, c.opts.checkRetention(o.ttl)
}

// merged applies opts over defaults. It is apart from settings because the
// options take a pointer through an interface, which moves the copy to the
// heap: a call without options does not pay for it.
func merged(defaults lockOptions, opts []LockOption) lockOptions {
	o := defaults
	for _, opt := range opts {
		if opt != nil {
			opt.applyLock(&o)
		}
	}
	return o
}

// TryLock makes exactly one attempt to acquire resource (R8), and one more
// at once in one case: when the nodes' facts, read while the first was
// under way, refuse a node that granted it and the others that granted it
// are no quorum (a replica just attached to a node, say); the second
// counts that node out. On failure the error satisfies errors.Is(err,
// ErrNotAcquired) and errors.As gives an *AcquireError with each node's
// outcome.
func (c *Client) TryLock(ctx context.Context, resource string, opts ...LockOption) (*Lock, error) {
	o, err := c.settings(resource, opts)
	if err != nil {
		return nil, err
	}
	o.tries = 1
	return c.acquire(ctx, c.one(resource), o)
}

// Lock acquires resource, retrying after a random delay (R10) until it
// succeeds, ctx ends, or the tries (WithTries) run out. Readers (RLock) do
// not starve it: a call that has waited half a ttl behind them leaves a
// writer's waiting mark and is granted as a writer (WLock), a plain lock
// on the nodes (rw.go). On failure the error
// satisfies errors.Is(err, ErrNotAcquired), and errors.Is(err, ctx.Err())
// when the context ended the wait.
func (c *Client) Lock(ctx context.Context, resource string, opts ...LockOption) (*Lock, error) {
	o, err := c.settings(resource, opts)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, c.one(resource), o)
}

// acquire is Lock and TryLock: attempts (R8, attempt below) until one
// succeeds, the tries run out, ctx ends or the client is closed, waiting
// between them as the client's waiting says (wait.go): the timed random
// delay of R10, or the hand-off's queue, where a lock handed over by this
// client's Unlock ends the wait.
func (c *Client) acquire(ctx context.Context, t target, o lockOptions) (*Lock, error) {
	resource := t.resource
	if c.isClosed() {
		return nil, c.stopped(resource, 0, nil, ErrClosed)
	}
	var last *AcquireError
	acquired := false
	// No barging past this client's calls that wait for the same key.
	tn, err := c.waits.first(ctx, t, o)
	defer func() { c.waits.end(t, tn, acquired) }()
	if err != nil {
		return nil, c.stopped(resource, 0, nil, err)
	}
	rechecked := false    // an attempt was given up on facts read after it (checkGranted)
	var marks *plainMarks // a waiter's marks behind readers (rw.go)
	defer func() {
		if marks != nil {
			c.endMarks(ctx, marks)
		}
	}()
	for try := 1; ; try++ {
		if tn.lock != nil {
			// Handed over by this client's Unlock: a grant like any
			// other, so checked against the max ttl the nodes advertise
			// now, which may have fallen since the call began.
			if err := c.checkAdvertised(tn.lock.ttl); err != nil {
				_ = tn.lock.Unlock(context.WithoutCancel(ctx))
				return nil, err
			}
			if err := c.keepable(ctx, tn.lock, try); err != nil {
				return nil, err // over nodes too slow to keep it (life.go)
			}
			acquired = true
			return tn.lock, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, c.stopped(resource, try-1, last, err)
		}
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			// Its timer has not run yet (a loaded machine runs timers
			// late): an attempt could only fail, and load every node.
			return nil, c.stopped(resource, try-1, last, context.DeadlineExceeded)
		}
		if try > 1 {
			// settings checked the first attempt; a node may have
			// restarted with a smaller max ttl while this call waited.
			if err := c.checkAdvertised(o.ttl); err != nil {
				return nil, err
			}
		}
		final := o.tries > 0 && try >= o.tries
		value, err := o.value, error(nil)
		if !o.valueSet {
			value, err = c.values.next()
		}
		if err != nil {
			return nil, err
		}
		tn.mark, tn.value = c.waits.mark(t, tn, value), value
		start := time.Now()
		// A value of the caller's (WithValue) is the same in every
		// attempt: a failed attempt then waits for every node's answer
		// and release, as a final one does, so that no release of it
		// lands after the next attempt set the same value (R8.5;
		// decideAcquire).
		l, aerr, af := c.attempt(ctx, t, value, o, final)
		if t.waiter != "" {
			marks.attempted(af) // behind readers (rw.go)
		}
		elapsed := time.Since(start)
		c.lastAttempt.Store(int64(elapsed))
		if aerr == nil {
			if err := c.checkGranted(l, o.ttl); err != nil {
				// Granted by nodes whose facts were read after the
				// attempt was sent, and they refuse it (nodecheck.go):
				// given up. Once per call, another attempt is made at
				// once when the other nodes can still make a quorum
				// (a TryLock's too): it counts the refused nodes out.
				// Not with a value of the caller's, whose releases
				// could land after the next attempt set it.
				l.lose(err)
				_ = l.Unlock(ctx)
				if rechecked || o.valueSet || c.checkAdvertised(o.ttl) != nil {
					return nil, err
				}
				rechecked = true
				o.tries += min(o.tries, 1) // the extra attempt is not one of WithTries'
				continue
			}
			if err := c.keepable(ctx, l, try); err != nil {
				// Granted over nodes too slow to keep it (life.go),
				// or ended before its first extension: given back.
				return nil, err
			}
			acquired = true
			return l, nil
		}
		aerr.Attempts = try
		if aerr.Patience == 0 && last != nil {
			// An earlier attempt of the call waited out its patience
			// for slow nodes (timeout.go: a node that does not answer
			// within it is not waited for again for a ttl, and a
			// failed attempt's keys may refuse the next): the reason
			// still holds.
			aerr.Patience, aerr.TTL = last.Patience, last.TTL
		}
		if err := c.cutShort(ctx, resource, try, last, aerr); err != nil {
			return nil, err
		}
		last = aerr
		if final || aerr.Cause != nil {
			return nil, aerr
		}
		marks = c.markReaders(ctx, marks, &t, o) // behind readers (rw.go)
		if tn, err = c.waits.next(ctx, t, o, tn, elapsed, aerr); err != nil {
			return nil, c.stopped(resource, try, last, err)
		}
	}
}

// cutShort returns the error of an acquisition whose attempt aerr (the
// try-th) the context cut, when an earlier attempt (last) was complete:
// the nodes the cut attempt did not hear from say nothing, so the error
// tells what the last complete attempt found (no quorum, held elsewhere).
// Otherwise it returns nil.
func (c *Client) cutShort(ctx context.Context, resource string, try int, last, aerr *AcquireError) error {
	if last == nil || aerr.Cause == nil || (ctx.Err() == nil && !pastDeadline(ctx, time.Now())) {
		return nil
	}
	return c.stopped(resource, try, last, aerr.Cause)
}

// stopped builds the error of an acquisition that the context or Close
// ended.
func (c *Client) stopped(resource string, attempts int, last *AcquireError, cause error) error {
	e := &AcquireError{Resource: resource, Attempts: attempts, Quorum: c.quorum, Cause: cause}
	if last != nil {
		e.Nodes, e.Validity, e.Patience, e.TTL = last.Nodes, last.Validity, last.Patience, last.TTL
	}
	return e
}

// One acquisition (R8), the same for every kind of lock: the attempt sends
// what the target's shape asks of each node, the quorum rule and the
// validity decide (decide and validity, pure functions, at the end of this
// file), a second phase may confirm (fencing), and the lock is granted
// (life.go: newLock) or every node's key released.

// target is what one acquisition locks: one resource, or a set, and the
// shape of its requests.
type target struct {
	// resource names the target in errors and events: the resource, or
	// the set's names in order, joined by ",".
	resource string
	key      string   // the lock key of one resource; "" for a set
	names    []string // a set's resource names, sorted; nil for one resource
	keys     []string // their lock keys, in the same order
	// waiter is the id of the waiting mark a writer leaves on the nodes
	// while it retries (rw.go); "" for none.
	waiter string
	shape  shape
}

// shape is what an attempt on a target asks of each node (R3): SET NX PX
// of one key (exclusive), of every key of a set at once
// (multi.go), a reader's or a writer's step (rw.go), each in its fenced
// form on a client with fencing (fencing.go).
type shape interface {
	// ask returns the request of an attempt on t with value, and the
	// nodeCall that carries it where AsyncNode does not (nil: the
	// request goes as it is).
	ask(c *Client, t target, value string, o lockOptions) (adapter.Request, nodeCall)
}

// one is the target of Lock and TryLock: one resource, exclusive.
func (c *Client) one(resource string) target {
	return target{resource: resource, key: c.opts.keyOf(c.opts.prefix, resource), shape: exclusive{}}
}

// exclusive is the shape of Lock and TryLock: SET NX PX of
// one key (R3), in its fenced form with WithFencing (R18, fencing.go).
type exclusive struct{}

func (exclusive) ask(c *Client, t target, value string, o lockOptions) (adapter.Request, nodeCall) {
	if t.waiter != "" {
		return writeShape{}.ask(c, t, value, o) // behind readers (rw.go: plainMarks)
	}
	req := adapter.Request{Op: adapter.OpAcquire, Key: t.key, Value: value, TTL: o.ttl}
	if !c.opts.fencing {
		return req, nil
	}
	req.Op = opAcquireFenced
	return req, c.fenced(t.resource, nil) // fencing.go
}

// confirmer is a nodeCall whose acquisition a second phase must confirm
// before the grant, within the same validity: fencing's phase 2 (R18,
// fencing.go).
type confirmer interface {
	// confirm runs once the acquisition acq reached a quorum within its
	// validity; phase1 is each node's outcome, in node order.
	confirm(acq *fan, resource string, phase1 []NodeResult) confirmation
}

// confirmation is what a second phase found. Its zero value is "none".
type confirmation struct {
	token  uint64        // the fencing token
	nodes  []NodeResult  // each node's outcome (Acquired: confirmed)
	at     time.Time     // the deciding reply
	failed bool          // too few nodes confirmed, or err
	waited time.Duration // the phase's patience for slow nodes (fan.waited)
	err    error         // what stopped the phase before it started
}

// attempt is one acquisition (R8): send what t's shape asks to all nodes at
// once (R15), decide as soon as a quorum acquired or can no longer acquire,
// compute the validity (R9), confirm (fencing's phase 2, R18), and on
// failure release on every node, including those that answer after the
// decision (R8.5, R11).
//
// When final is set (TryLock, the last of WithTries), a failed attempt also
// waits for the nodes it did not wait for to answer or time out, and for
// their releases: the error then reports every node's outcome, so that
// "held elsewhere" and "no quorum" are told apart exactly, and no key of the
// attempt outlives the call. The decision itself never waits for them, and
// no wait goes past ctx's end: the releases still owed
// then go on in the background, and Client.Close waits for them. An
// attempt with a value of the caller's (WithValue) waits as a final one
// does (decideAcquire), so that no release of it lands after the next
// attempt set the same value (R8.5). An attempt that a closed client sent
// to no node fails with ErrClosed and no node's outcome. The fan is
// returned too (nil when sent to no node): a writer's removal of its
// waiting marks waits for its answers (rw.go).
func (c *Client) attempt(ctx context.Context, t target, value string, o lockOptions, final bool) (*Lock, *AcquireError, *fan) {
	req, by := t.shape.ask(c, t, value, o)
	f := c.newFan(ctx, ctx, req, stopDecided)
	if f == nil {
		return nil, &AcquireError{Resource: t.resource, Quorum: c.quorum, Cause: ErrClosed}, nil
	}
	f.by = by
	c.send(f)
	l, aerr := c.decideAcquire(f, t.resource, o, final, nil)
	return l, aerr, f
}

// decideAcquire decides the acquisition f, sent by attempt or by a
// hand-over (handoff_release.go): the validity (R9), the confirmation
// (fencing's phase 2), the grant or the releases (R8.5). from is the lock
// this one was handed over from in this client, or nil: the new lock
// continues its chain (runs and extensions count on, WithHandoffLimit,
// R17).
func (c *Client) decideAcquire(f *fan, resource string, o lockOptions, final bool, from *Lock) (*Lock, *AcquireError) {
	state, t2 := f.await()
	d := drift(o.ttl, o.driftFactor)
	t1 := f.t1
	// The fan waited out its patience for slow nodes: those that timed
	// out did so by it, not by their own errors (the error says so).
	waitedOut := f.waited > 0 && !t2.Before(t1.Add(f.waited))
	v := validity(o.ttl, t2.Sub(t1), d)
	var cf confirmation
	if p, ok := f.by.(confirmer); ok && state == reached && v > 0 {
		// Within the same validity (R18: phase 2, fencing.go).
		cf = p.confirm(f, resource, f.results())
		t2 = cf.at
		v = validity(o.ttl, t2.Sub(t1), d)
	}
	if state == reached && v > 0 && !cf.failed {
		f.settle(false, false)
		l := c.newLock(f, resource, o, d, cf.token, from) // life.go
		if len(c.obs) > 0 {
			c.obs.Attempt(AttemptEvent{Resource: resource, Outcome: AttemptAcquired, Elapsed: t2.Sub(t1), Validity: v, Nodes: f.results(), Fence: cf.nodes, Token: cf.token, Handed: from != nil})
		}
		return l, nil
	}
	if from == nil && (final || f.ctx.Err() != nil || pastDeadline(f.ctx, time.Now()) || c.isClosed()) {
		// The Lock call ends here, and gives back unannounced the keys
		// it may have set (R8.5): the client's waiters that failed on
		// them are woken once the releases are done (waiting.gaveBack).
		f.gaveBack = true
	}
	f.keepLost = o.valueSet
	f.settle(true, final || o.valueSet)
	e := &AcquireError{Resource: resource, Quorum: c.quorum, Nodes: f.results(), Fence: cf.nodes, Cause: cf.err}
	if state == reached && !cf.failed {
		e.Validity = v
	}
	if waitedOut && e.Count(TimedOut) > 0 {
		e.Patience, e.TTL = f.waited, o.ttl
	} else if cf.waited > 0 && countOutcome(cf.nodes, TimedOut) > 0 {
		e.Patience, e.TTL = cf.waited, o.ttl
	}
	if err := f.ctx.Err(); err != nil && e.Cause == nil {
		e.Cause = err
	} else if e.Cause == nil && pastDeadline(f.ctx, time.Now()) {
		e.Cause = context.DeadlineExceeded // its timer has not fired yet
	} else if e.Cause == nil {
		e.Cause = c.deniedCause(e) // a permission, not contention (nodecheck.go)
	}
	if len(c.obs) > 0 {
		c.obs.Attempt(AttemptEvent{Resource: resource, Outcome: e.outcome(f.ctx), Elapsed: t2.Sub(t1), Validity: e.Validity, Nodes: e.Nodes, Fence: cf.nodes})
	}
	return nil, e
}

// decision is the state of a fan-out after some of its replies.
type decision int

const (
	undecided  decision = iota
	reached             // a quorum said yes
	impossible          // too many said no or failed for a quorum to be reached
)

// decide is the quorum rule of R8.3 as a pure function: with n nodes, a
// quorum of q, yes nodes that said yes and no nodes that said no or failed,
// the outcome is known as soon as yes >= q, or as soon as the nodes that may
// still say yes (n - no) are fewer than q. The client never waits for a
// straggler beyond that point (R15).
func decide(n, q, yes, no int) decision {
	switch {
	case yes >= q:
		return reached
	case n-no < q:
		return impossible
	}
	return undecided
}

// majority is the quorum of R8.3: at least n/2+1 of n nodes.
func majority(n int) int { return n/2 + 1 }

// WithByzantineNodes makes the client tolerate up to f nodes that lie:
// answer OK to a SET they did not perform, confirm an extension or a fence
// they did not apply, report fence values they do not hold. The quorum
// becomes ceil((N+f+1)/2), so that two quorums share at least f+1 nodes and
// so at least one honest node (the B3 bound of the agreement spec: New
// refuses N < 3f+1, where f silent or lying nodes would leave fewer honest
// nodes than a quorum). With WithFencing the quorum is ceil((N+2f+1)/2) and
// N >= 4f+1 is required: a fencing token takes the (f+1)-th largest fence
// value of the quorum (so a liar cannot inflate it), which is safe only if
// every two quorums share f+1 honest nodes. Default 0: every node is
// trusted, and the quorum is the majority N/2+1 of R8.3.
//
// What the mode does not cover: more than f liars; a liar that colludes with
// a client; lying clients; clocks (a node whose clock runs fast is not a
// liar in this sense, see R9). See the package documentation.
func WithByzantineNodes(f int) Option {
	return clientOption(func(o *clientOptions) { o.byzantine = f })
}

// quorumFor is the number of nodes an acquisition needs among n nodes with
// the client's settings, or an error naming both numbers when n is too
// small for the Byzantine bound.
func quorumFor(n int, o clientOptions) (int, error) {
	f := o.byzantine
	switch {
	case f < 0:
		return 0, invalidf("byzantine nodes must be 0 or more, got %d", f)
	case f == 0:
		return majority(n), nil
	case o.fencing:
		if n < 4*f+1 {
			return 0, invalidf("byzantine mode with fencing and f=%d needs at least 4f+1 = %d nodes, got %d: fencing tokens need every two quorums to share f+1 honest nodes", f, 4*f+1, n)
		}
		return ceilHalf(n + 2*f + 1), nil
	case n < 3*f+1:
		return 0, invalidf("byzantine mode with f=%d needs at least 3f+1 = %d nodes, got %d (B3): with fewer, f silent nodes leave the honest ones short of a quorum that excludes the liars", f, 3*f+1, n)
	}
	return ceilHalf(n + f + 1), nil
}

// ceilHalf is ceil(x/2) for x >= 0.
func ceilHalf(x int) int { return (x + 1) / 2 }

// drift is the clock drift compensation of R9: ttl x factor + 2 ms.
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + 2*time.Millisecond
}

// validity is MIN_VALIDITY of R9: ttl - elapsed - drift, where elapsed runs
// from before the first request (T1) to the deciding reply (T2). A lock is
// held only if it is positive (R8.3-4).
func validity(ttl, elapsed, drift time.Duration) time.Duration {
	return ttl - elapsed - drift
}

// valueSize is the number of random bytes in a lock value (R4: 20 bytes from
// a secure source).
const valueSize = 20

// tagSize is the number of random bytes of a client's tag, which starts
// each of its values: tagLen characters once base64url-encoded, a whole
// number of characters, so that the tag is a prefix of the encoded value.
const (
	tagSize  = 6
	tagLen   = tagSize * 4 / 3
	valueLen = tagLen + (valueSize*8+5)/6
)

// valueSource hands out lock values from crypto/rand, reading it in blocks
// so that an acquisition does not pay a system call. Every value starts
// with the client's tag (random, drawn once per client): the release
// announcements of the hand-off (R14) then tell the clients which client
// released, so that they all rank their waiters alike (wait.go: rank).
// The 20 random bytes after it keep every value unique and unguessable
// (R4).
type valueSource struct {
	tag string
	mu  sync.Mutex
	buf [valueSize * 64]byte
	off int
}

func newValueSource() (*valueSource, error) {
	var raw [tagSize]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	return &valueSource{tag: base64.RawURLEncoding.EncodeToString(raw[:]), off: len((&valueSource{}).buf)}, nil
}

// tagOf returns the client tag that starts value, or "" for a value that
// no client of this package drew (WithValue's).
func tagOf(value string) string {
	if len(value) != valueLen {
		return ""
	}
	return value[:tagLen]
}

// next returns a fresh value: the client's tag, then 20 secure random bytes,
// base64url-encoded.
func (s *valueSource) next() (string, error) {
	var raw [valueSize]byte
	s.mu.Lock()
	if s.off == len(s.buf) {
		if _, err := rand.Read(s.buf[:]); err != nil {
			s.mu.Unlock()
			return "", err
		}
		s.off = 0
	}
	copy(raw[:], s.buf[s.off:s.off+valueSize])
	clear(s.buf[s.off : s.off+valueSize])
	s.off += valueSize
	s.mu.Unlock()
	var b [valueLen]byte
	copy(b[:], s.tag)
	base64.RawURLEncoding.Encode(b[tagLen:], raw[:])
	return string(b[:]), nil
}
