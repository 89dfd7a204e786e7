package redlock

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Client acquires locks over N independent Redis masters (R7). It is safe for
// concurrent use; create one per process and share it.
type Client struct {
	nodes  []Node
	async  []AsyncNode // the nodes, when every one is an AsyncNode (async.go)
	names  []string
	opts   clientOptions
	quorum int
	values *valueSource
	hand   *handoff      // nil without hand-off (handoff.go)
	obs    observers     // WithObserver, WithLogger (observer.go)
	stop   chan struct{} // closed by Close: stops the extenders (life.go)

	// phaseHook, when set (by tests only), runs between phase 1 and
	// phase 2 of a fenced acquisition (fencing.go).
	phaseHook func(resource string)

	rmu sync.Mutex
	rng *mrand.Rand

	bg sync.WaitGroup // late releases and in-flight requests
	// settlers counts the goroutines that settle what a Lock call left
	// behind (abandon, drop): while one runs, bgAdd lets requests start
	// even after Close began, so that its keys are released (settle).
	settlers int
	idle     sync.WaitGroup // never added to: Lock.inflight of a passed lock (pass.go)
	mu       sync.Mutex
	closed   bool
}

// New returns a client over nodes, each an independent master (R2, R7). It
// refuses no nodes, a nil or duplicate node, and any invalid option, with an
// error wrapping ErrInvalid that says what is wrong.
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
	if err := o.validateFencing(nodes, names); err != nil {
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
	c := &Client{
		nodes:  append([]Node(nil), nodes...),
		async:  asyncNodes(nodes),
		names:  names,
		opts:   o,
		quorum: quorum,
		values: newValueSource(),
		rng:    mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		obs:    observers(o.observers),
		stop:   make(chan struct{}),
	}
	c.hand = newHandoff(c)
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

// Close waits for the client's background work (releases of failed attempts
// on nodes that answered late) and then closes every node that implements
// io.Closer. A closed client refuses new acquisitions with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stop)
	c.mu.Unlock()
	c.bg.Wait()
	c.hand.close()
	var errs []error
	for _, n := range c.nodes {
		if cl, ok := n.(io.Closer); ok {
			errs = append(errs, cl.Close())
		}
	}
	return errors.Join(errs...)
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

// TryLock makes exactly one attempt to acquire resource (R8). On failure the
// error satisfies errors.Is(err, ErrNotAcquired) and errors.As gives an
// *AcquireError with each node's outcome.
func (c *Client) TryLock(ctx context.Context, resource string, opts ...LockOption) (*Lock, error) {
	o, err := c.settings(resource, opts)
	if err != nil {
		return nil, err
	}
	o.tries = 1
	return c.acquire(ctx, resource, o)
}

// Lock acquires resource, retrying after a random delay (R10) until it
// succeeds, ctx ends, or the tries (WithTries) run out. On failure the error
// satisfies errors.Is(err, ErrNotAcquired), and errors.Is(err, ctx.Err())
// when the context ended the wait.
func (c *Client) Lock(ctx context.Context, resource string, opts ...LockOption) (*Lock, error) {
	o, err := c.settings(resource, opts)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, resource, o)
}

func (c *Client) acquire(ctx context.Context, resource string, o lockOptions) (*Lock, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	key := c.opts.prefix + resource
	var last *AcquireError
	var w *waiter // hand-off queue place, after the first failure
	acquired := false
	defer func() { c.leaveHandoff(key, w, acquired) }()
	// handed is what this client's Unlock gave this call when it handed
	// the lock over: an attempt it started (handOver), or the lock (pass).
	handed, err := c.waitTurn(ctx, key, resource, o, &w) // hand-off: no barging
	if err != nil {
		return nil, c.stopped(resource, 0, nil, err)
	}
	for try := 1; ; try++ {
		if handed.lock != nil {
			acquired = true
			return handed.lock, nil
		}
		start := time.Now()
		final := o.tries > 0 && try >= o.tries
		var l *Lock
		var aerr *AcquireError
		if pre := handed.pre; pre != nil {
			l, aerr = pre.await()
		} else {
			if err := ctx.Err(); err != nil {
				return nil, c.stopped(resource, try-1, last, err)
			}
			value, err := c.values.next()
			if err != nil {
				return nil, err
			}
			l, aerr = c.attempt(ctx, resource, key, value, o, final)
		}
		if aerr == nil {
			acquired = true
			return l, nil
		}
		aerr.Attempts = try
		last = aerr
		if final {
			if err := ctx.Err(); err != nil {
				aerr.Cause = err
			}
			return nil, aerr
		}
		if handed, err = c.waitRetry(ctx, key, resource, o, time.Since(start), aerr, &w); err != nil {
			return nil, c.stopped(resource, try, last, err)
		}
	}
}

// stopped builds the error of an acquisition that the context ended.
func (c *Client) stopped(resource string, attempts int, last *AcquireError, cause error) error {
	e := &AcquireError{Resource: resource, Attempts: attempts, Quorum: c.quorum, Cause: cause}
	if last != nil {
		e.Nodes, e.Validity = last.Nodes, last.Validity
	}
	return e
}

// retryDelay draws the random delay of R10 from [min, max].
func (c *Client) retryDelay(o lockOptions) time.Duration {
	if o.retryMax <= o.retryMin {
		return o.retryMin
	}
	c.rmu.Lock()
	d := o.retryMin + time.Duration(c.rng.Int64N(int64(o.retryMax-o.retryMin)+1))
	c.rmu.Unlock()
	return d
}

// reply is one node's answer in a fan-out.
type reply struct {
	i       int
	none    bool // no answer (NoReply): the fan-out returned before it
	ok      bool
	err     error
	latency time.Duration
}

// call runs op on node i bounded by the node timeout and classifies the
// answer.
func (c *Client) call(ctx context.Context, i int, op func(context.Context, Node) (bool, error)) reply {
	nctx, cancel := context.WithTimeout(ctx, c.opts.nodeTimeout)
	defer cancel()
	return c.callIn(nctx, i, op)
}

// callIn runs op on node i within nctx, which the caller has bounded by the
// node timeout (R8.2), and classifies the answer. A fan-out shares one such
// context among its nodes: the nodes are asked at the same moment, so one
// deadline bounds each of them, and the fan-out pays for one timer instead
// of one per node.
func (c *Client) callIn(nctx context.Context, i int, op func(context.Context, Node) (bool, error)) reply {
	start := time.Now()
	ok, err := op(nctx, c.nodes[i])
	return reply{i: i, ok: ok && err == nil, err: err, latency: time.Since(start)}
}

// outcome classifies an acquire reply.
func (r reply) outcome() Outcome {
	switch {
	case r.none:
		return NoReply
	case r.err != nil && isTimeout(r.err):
		return TimedOut
	case r.err != nil:
		return Failed
	case r.ok:
		return Acquired
	}
	return Held
}

// isTimeout reports whether err is a node timeout: the context's deadline or
// an error that says it timed out. It is apart from outcome so that a reply
// without an error does not pay for the errors.As target.
func isTimeout(err error) bool {
	var timeout interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &timeout) && timeout.Timeout()
}

// attempt is one acquisition (R8): send SET NX PX to all nodes at once (R15),
// decide as soon as a quorum acquired or can no longer acquire, compute the
// validity (R9), and on failure release on every node, including those that
// answer after the decision (R8.5, R11).
//
// When final is set (TryLock, the last of WithTries), a failed attempt also
// waits for the nodes it did not wait for to answer or time out, and for
// their releases: the error then reports every node's outcome, so that
// "held elsewhere" and "no quorum" are told apart exactly, and no key of the
// attempt outlives the call. The decision itself never waits for them.
func (c *Client) attempt(ctx context.Context, resource, key, value string, o lockOptions, final bool) (*Lock, *AcquireError) {
	a, err := c.prepareAttempt(ctx, resource, key, value, o, final)
	if err != nil {
		return nil, err
	}
	a.send()
	return a.await()
}

// prepareAttempt readies an attempt for send and await. The hand-off
// prepares the next waiter's attempt in Unlock and sends its requests right
// behind the releases (handOver).
func (c *Client) prepareAttempt(ctx context.Context, resource, key, value string, o lockOptions, final bool) (*attemptRun, *AcquireError) {
	n := len(c.nodes)
	if !c.bgAdd(n) {
		return nil, &AcquireError{Resource: resource, Quorum: c.quorum, Cause: ErrClosed}
	}
	a := &attemptRun{
		c:        c,
		ctx:      ctx,
		resource: resource,
		key:      key,
		value:    value,
		opts:     o,
		final:    final,
		replies:  make(chan reply, n),
	}
	a.early, a.seen, a.results = a.earlyBuf[:0], a.seenBuf[:0], a.resultsBuf[:0]
	if n > len(a.earlyBuf) {
		a.early, a.seen, a.results = make([]bool, 0, n), make([]bool, 0, n), make([]NodeResult, 0, n)
	}
	a.early, a.seen, a.results = a.early[:n], a.seen[:n], a.results[:n]
	a.inflight.Add(n)
	a.pending.Store(int32(n))
	if c.opts.fencing {
		a.fenceKey = c.opts.fencePrefix + resource
		a.fences = make([]uint64, n) // phase 1 of fencing reads each node's fence (fencing.go)
	}
	a.nctx, a.cancel = context.WithTimeout(ctx, c.opts.nodeTimeout)
	for i := range a.results {
		a.results[i] = NodeResult{Node: c.names[i], Outcome: NoReply}
	}
	a.t1 = time.Now() // R8.1: before the first request
	return a, nil
}

// async reports whether the attempt's acquisitions go through
// AsyncNode.Start (acquireCall) rather than a goroutine per node.
func (a *attemptRun) async() bool { return a.c.async != nil && a.fences == nil }

// acquireCall is the attempt's acquisition on node i, for AsyncNode.Start.
func (a *attemptRun) acquireCall(i int) Call {
	return Call{Ctx: a.nctx, Req: Request{Op: OpAcquire, Key: a.key, Value: a.value, TTL: a.opts.ttl}, To: a, Tag: i}
}

// send sends the attempt's requests to every node at once (R15).
func (a *attemptRun) send() {
	if a.async() {
		for i, an := range a.c.async {
			cl := a.acquireCall(i)
			an.Start(cl.Ctx, cl.Req, cl.To, cl.Tag)
		}
		return
	}
	for i := range a.c.nodes {
		go a.node(i)
	}
}

// await decides the attempt: as soon as a quorum acquired or can no longer
// acquire (R8.3, R8.4), or at the node timeout (R8.2); then the validity
// (R9), fencing's phase 2 (R18), and on failure the releases (R8.5).
func (a *attemptRun) await() (*Lock, *AcquireError) {
	c, ctx, o := a.c, a.ctx, a.opts
	resource, key, value, final := a.resource, a.key, a.value, a.final
	n := len(c.nodes)
	d := drift(o.ttl, o.driftFactor)
	t1 := a.t1
	replies, seen, fences, results := a.replies, a.seen, a.fences, a.results

	yes, no := 0, 0
	count := func(r reply) {
		seen[r.i] = true
		results[r.i] = NodeResult{Node: c.names[r.i], Outcome: r.outcome(), Err: r.err, Latency: r.latency}
		if r.ok {
			yes++
		} else {
			no++
		}
	}
	expired := a.nctx.Done()
	var t2 time.Time
	state := undecided
	for state == undecided {
		select {
		case r := <-replies:
			count(r)
		case <-expired:
			// R8.2: the node timeout has passed (or ctx ended). Every
			// answer given so far is in replies; the nodes that have not
			// answered count as timed out, and their answers, when they
			// come, are handled as late ones.
			expired = nil
			for drained := false; !drained; {
				select {
				case r := <-replies:
					count(r)
				default:
					drained = true
				}
			}
			err := a.nctx.Err()
			for i := range seen {
				if !seen[i] {
					count(reply{i: i, err: err, latency: time.Since(t1)})
				}
			}
		}
		state = decide(n, c.quorum, yes, no)
		t2 = time.Now()
	}
	v := validity(o.ttl, t2.Sub(t1), d)
	var fz fenceResult
	if state == reached && v > 0 && fences != nil {
		// R18: phase 2, within the same validity (fencing.go).
		fz = c.fence(ctx, resource, key, value, results, fences)
		t2 = fz.at
		v = validity(o.ttl, t2.Sub(t1), d)
	}
	if state == reached && v > 0 && !fz.failed {
		a.verdict(false)
		l := &Lock{
			client:   c,
			resource: resource,
			key:      key,
			value:    value,
			ttl:      o.ttl,
			drift:    d,
			until:    t1.Add(o.ttl - d),
			inflight: &a.inflight,
			token:    fz.token,
		}
		c.start(l, o) // auto-extension, Done (life.go)
		if len(c.obs) > 0 {
			c.obs.Attempt(AttemptEvent{Resource: resource, Outcome: AttemptAcquired, Elapsed: t2.Sub(t1), Validity: v, Nodes: results, Fence: fz.nodes, Token: fz.token})
		}
		return l, nil
	}
	// R8.5, R11: the attempt failed; give back every key at once.
	a.verdict(true)
	if final {
		a.late.Wait() // every node answered, and released
	}
	a.releases.Wait()
	e := &AcquireError{Resource: resource, Quorum: c.quorum, Nodes: results, Fence: fz.nodes, Cause: fz.err}
	if state == reached && !fz.failed {
		e.Validity = v
	}
	if len(c.obs) > 0 {
		c.obs.Attempt(AttemptEvent{Resource: resource, Outcome: e.outcome(ctx), Elapsed: t2.Sub(t1), Validity: e.Validity, Nodes: results, Fence: fz.nodes})
	}
	return nil, e
}

// attemptRun is the state that one attempt shares with the answers of its
// nodes (goroutines, or an AsyncNode's Receive), in one allocation instead
// of one per shared variable.
type attemptRun struct {
	c          *Client
	ctx        context.Context // the caller's
	resource   string
	opts       lockOptions
	nctx       context.Context    // the acquires' node timeout (R8.2), shared (callIn)
	cancel     context.CancelFunc // of nctx, called by the last acquire to answer
	pending    atomic.Int32       // acquires not answered yet
	key, value string
	fenceKey   string
	t1         time.Time // R8.1
	final      bool      // a failed attempt waits for every node (attempt)
	fences     []uint64  // fencing: each node's fence, read in phase 1 (fencing.go)
	replies    chan reply
	seen       []bool         // nodes counted in the decision (attempt's own)
	results    []NodeResult   // each node's outcome, for errors and observers
	releases   sync.WaitGroup // releases on the nodes that answered before the verdict
	late       sync.WaitGroup // releases on the others
	inflight   sync.WaitGroup // acquires in flight (Lock.inflight)

	mu      sync.Mutex
	decided bool   // the verdict is given
	failed  bool   // the verdict: the attempt failed
	early   []bool // nodes that answered before the verdict

	// Backing arrays of early, seen and results for up to 7 nodes, so that
	// an attempt over a usual deployment is fewer allocations.
	earlyBuf   [7]bool
	seenBuf    [7]bool
	resultsBuf [7]NodeResult
}

// node is node i's part of the attempt over a blocking Node: acquire, then
// answer.
func (a *attemptRun) node(i int) {
	c := a.c
	var r reply
	if a.fences != nil {
		r = c.callIn(a.nctx, i, c.fencedAcquire(a.key, a.fenceKey, a.value, a.opts.ttl, &a.fences[i]))
	} else {
		start := time.Now()
		ok, err := c.nodes[i].Acquire(a.nctx, a.key, a.value, a.opts.ttl)
		r = reply{i: i, ok: ok && err == nil, err: err, latency: time.Since(start)}
	}
	a.answer(r, true)
}

// Receive is an AsyncNode's answer to node tag's acquire (AsyncNode.Start).
func (a *attemptRun) Receive(tag int, ok bool, err error) {
	a.answer(reply{i: tag, ok: ok && err == nil, err: err, latency: time.Since(a.t1)}, false)
}

// answer takes node r.i's answer. Before the verdict it goes to the
// decision; after a failed verdict it is released at once (R8.5), inline
// when mayBlock, else on a goroutine. Each node's share of c.bg passes from
// its acquire to its release.
func (a *attemptRun) answer(r reply, mayBlock bool) {
	c := a.c
	a.inflight.Done()
	a.mu.Lock()
	decided, failed := a.decided, a.failed
	if !decided {
		a.early[r.i] = true
		a.replies <- r // buffered for every node: never blocks
	} else if failed && a.final {
		// The attempt waits (late.Wait) to report every node.
		a.results[r.i] = NodeResult{Node: c.names[r.i], Outcome: r.outcome(), Err: r.err, Latency: r.latency}
	}
	a.mu.Unlock()
	if a.pending.Add(-1) == 0 {
		a.cancel()
	}
	switch {
	case !decided:
	case !failed:
		c.bg.Done()
	case mayBlock:
		a.releaseNode(r.i, &a.late)
	default:
		go a.releaseNode(r.i, &a.late)
	}
}

// verdict records the decision and settles the nodes that answered before
// it: when the attempt failed, each is released (R8.5) on its own
// goroutine; the others are released as they answer (answer). It counts the
// releases in a.releases and a.late.
func (a *attemptRun) verdict(failed bool) {
	c := a.c
	a.mu.Lock()
	a.decided, a.failed = true, failed
	early := 0
	for _, e := range a.early {
		if e {
			early++
		}
	}
	// Answers that came in after the decision loop stopped reading.
	for drained := false; !drained; {
		select {
		case r := <-a.replies:
			a.results[r.i] = NodeResult{Node: c.names[r.i], Outcome: r.outcome(), Err: r.err, Latency: r.latency}
		default:
			drained = true
		}
	}
	if failed {
		a.releases.Add(early)
		a.late.Add(len(a.early) - early)
	}
	a.mu.Unlock()
	for i, e := range a.early {
		switch {
		case !e:
		case failed:
			go a.releaseNode(i, &a.releases)
		default:
			c.bg.Done()
		}
	}
}

// releaseNode releases the attempt's key on node i (R8.5): on every node,
// even one we believe we did not lock, detached from ctx so that a
// cancelled caller still gives back what it set. It ends node i's share of
// c.bg and one count of wg.
func (a *attemptRun) releaseNode(i int, wg *sync.WaitGroup) {
	a.c.call(context.WithoutCancel(a.ctx), i, a.release)
	wg.Done()
	a.c.bg.Done()
}

// release is the compare-and-delete of the attempt's value (R5).
func (a *attemptRun) release(ctx context.Context, n Node) (bool, error) {
	return n.Release(ctx, a.key, a.value)
}
