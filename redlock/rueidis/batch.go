package rueidis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"dlm/redlock"
)

// The batcher: every Acquire, Release, ReleaseAnnounce, Extend and Transfer
// of a Node, blocking or started with Start (redlock.AsyncNode), joins the
// node's queue. One worker per node at a time takes the whole queue and sends it in
// one DoMulti: one write and one round trip for all the requests that
// arrived while the previous batch was on the wire (R15). The batches
// are self-clocking: the busier the node, the larger each batch, with no
// flush delay; a lone request goes out at once. A node executes its
// requests in the order they joined the queue, so a release never overtakes
// the acquisition it undoes (R8.5).

// queued is one request waiting in a node's queue.
type queued struct {
	ctx context.Context
	req redlock.Request
	to  redlock.Receiver
	tag int
}

// batcher is a node's queue and the state of its worker.
type batcher struct {
	mu      sync.Mutex
	queue   []queued
	spare   []queued // the worker's last batch, for reuse
	running bool     // a worker goroutine is draining the queue

	// worker is the node's work method, made into a func value once:
	// starting a worker then allocates nothing (NewNode).
	worker func()

	// The running worker's buffers and deadline.
	cmds    []rueidis.Completed
	retries []int
	one     [1]rueidis.RedisResult
	dctx    *deadlineCtx
}

var _ redlock.BatchNode = (*Node)(nil)

// Start queues req and returns (redlock.AsyncNode). The answer goes to
// to.Receive(tag, ...) once the node answered, the request failed, or ctx
// was already done when its batch left.
func (n *Node) Start(ctx context.Context, req redlock.Request, to redlock.Receiver, tag int) {
	if err := refuse(ctx, req); err != nil {
		to.Receive(tag, false, err)
		return
	}
	b := &n.batch
	b.mu.Lock()
	b.queue = append(b.queue, queued{ctx: ctx, req: req, to: to, tag: tag})
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go n.batch.worker()
	}
}

// StartAll queues calls, in order, so that they leave in the same batch
// (redlock.BatchNode): the hand-off sends a release and the next waiter's
// acquisition together.
func (n *Node) StartAll(calls []redlock.Call) {
	b := &n.batch
	b.mu.Lock()
	for _, cl := range calls {
		if err := refuse(cl.Ctx, cl.Req); err != nil {
			defer cl.To.Receive(cl.Tag, false, err) // outside b.mu
			continue
		}
		b.queue = append(b.queue, queued{ctx: cl.Ctx, req: cl.Req, to: cl.To, tag: cl.Tag})
	}
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go n.batch.worker()
	}
}

// refuse is the error that answers a request at once: its context is done,
// or its operation is not one of redlock's.
func refuse(ctx context.Context, req redlock.Request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch req.Op {
	case redlock.OpAcquire, redlock.OpRelease, redlock.OpReleaseAnnounce, redlock.OpExtend, redlock.OpTransfer:
		return nil
	}
	return fmt.Errorf("rueidis: unknown operation %v: expected acquire, release, release-announce, extend or transfer", req.Op)
}

// work sends the queue in batches until it finds it empty.
func (n *Node) work() {
	b := &n.batch
	b.mu.Lock()
	batch := b.spare
	b.spare = nil
	for len(b.queue) > 0 {
		batch, b.queue = b.queue, batch[:0]
		b.mu.Unlock()
		n.send(batch)
		clear(batch) // drop the references to contexts and receivers
		b.mu.Lock()
	}
	b.running = false
	b.queue, b.spare = batch[:0], b.queue[:0] // the next Start appends to a buffer
	b.mu.Unlock()
}

// send runs one batch: one DoMulti of every request whose context is still
// live, bounded by the latest of their deadlines (so that one caller's short
// deadline does not fail the others), then EVAL for the scripts the node did
// not have (NOSCRIPT: a restart, SCRIPT FLUSH).
func (n *Node) send(batch []queued) {
	b := &n.batch
	c := n.client
	cmds := b.cmds[:0]
	var deadline time.Time
	bounded := true
	live := batch[:0]
	for _, q := range batch {
		if err := q.ctx.Err(); err != nil {
			q.to.Receive(q.tag, false, err)
			continue
		}
		if d, ok := q.ctx.Deadline(); !ok {
			bounded = false
		} else if d.After(deadline) {
			deadline = d
		}
		live = append(live, q)
		cmds = append(cmds, n.command(q.req, false))
	}
	b.cmds = cmds
	if len(live) == 0 {
		return
	}
	ctx := context.Background()
	if bounded {
		if b.dctx == nil {
			b.dctx = newDeadlineCtx()
		}
		ctx = b.dctx.arm(deadline)
		defer func() {
			if !b.dctx.disarm() {
				// The deadline passed: rueidis may still hold this batch's
				// commands, so neither the context nor the command
				// buffer is reused.
				b.dctx, b.cmds = nil, nil
			}
		}()
	}
	var res []rueidis.RedisResult
	if len(cmds) == 1 {
		// A lone request: Do allocates less than DoMulti for one command.
		b.one[0] = c.Do(ctx, cmds[0])
		res = b.one[:]
	} else {
		res = c.DoMulti(ctx, cmds...)
	}
	retries := b.retries[:0]
	for i, q := range live {
		if s := n.scriptOf(q.req.Op); s != nil {
			if rerr, ok := rueidis.IsRedisErr(res[i].Error()); ok && rerr.IsNoScript() {
				s.cached.Store(false) // restarted, or SCRIPT FLUSH
				retries = append(retries, i)
				continue
			}
			if res[i].NonRedisError() == nil {
				s.cached.Store(true) // it ran, by EVAL or EVALSHA
			}
		}
		ok, err := answer(q.req.Op, res[i])
		q.to.Receive(q.tag, ok, err)
	}
	b.retries = retries[:0]
	if len(retries) == 0 {
		return
	}
	cmds = make([]rueidis.Completed, 0, len(retries))
	for _, i := range retries {
		cmds = append(cmds, n.command(live[i].req, true))
	}
	res = c.DoMulti(ctx, cmds...)
	for j, i := range retries {
		if res[j].NonRedisError() == nil {
			n.scriptOf(live[i].req.Op).cached.Store(true)
		}
		ok, err := answer(live[i].req.Op, res[j])
		live[i].to.Receive(live[i].tag, ok, err)
	}
}

// scriptOf returns the script that runs op, nil for an acquisition (SET).
func (n *Node) scriptOf(op redlock.Op) *script {
	switch op {
	case redlock.OpAcquire:
		return nil
	case redlock.OpExtend:
		return n.extend
	case redlock.OpReleaseAnnounce:
		return n.publish
	case redlock.OpTransfer:
		return n.handOn
	}
	return n.release // OpRelease (refuse lets no other op in)
}

// command builds req's command: SET NX PX for an acquisition (R3), else its
// script by EVALSHA, or by EVAL when eval is set or the node is not known
// to have the script.
func (n *Node) command(req redlock.Request, eval bool) rueidis.Completed {
	c := n.client
	s := n.scriptOf(req.Op)
	arg2 := ""
	switch req.Op {
	case redlock.OpAcquire:
		return c.B().Set().Key(req.Key).Value(req.Value).Nx().PxMilliseconds(req.TTL.Milliseconds()).Build()
	case redlock.OpExtend:
		arg2 = strconv.FormatInt(req.TTL.Milliseconds(), 10)
	case redlock.OpReleaseAnnounce:
		arg2 = ChannelPrefix
	case redlock.OpTransfer:
		ttl := strconv.FormatInt(req.TTL.Milliseconds(), 10)
		if eval || !s.cached.Load() {
			return c.B().Eval().Script(s.src).Numkeys(1).Key(req.Key).Arg(req.From, req.Value, ttl).Build()
		}
		return c.B().Evalsha().Sha1(s.sha).Numkeys(1).Key(req.Key).Arg(req.From, req.Value, ttl).Build()
	}
	eval = eval || !s.cached.Load()
	switch {
	case eval && arg2 == "":
		return c.B().Eval().Script(s.src).Numkeys(1).Key(req.Key).Arg(req.Value).Build()
	case eval:
		return c.B().Eval().Script(s.src).Numkeys(1).Key(req.Key).Arg(req.Value, arg2).Build()
	case arg2 == "":
		return c.B().Evalsha().Sha1(s.sha).Numkeys(1).Key(req.Key).Arg(req.Value).Build()
	}
	return c.B().Evalsha().Sha1(s.sha).Numkeys(1).Key(req.Key).Arg(req.Value, arg2).Build()
}

// answer reads a reply as the blocking method of op returns it: SET NX
// answers OK or nil (held); the scripts answer 1 when they acted.
func answer(op redlock.Op, r rueidis.RedisResult) (bool, error) {
	err := r.Error()
	if op == redlock.OpAcquire {
		switch {
		case err == nil:
			return true, nil
		case rueidis.IsRedisNil(err):
			return false, nil
		}
		return false, err
	}
	v, err := r.AsInt64()
	return v == 1 && err == nil, err
}

// waiter turns one queued request back into a blocking call.
type waiter struct {
	ch chan waited
}

type waited struct {
	ok  bool
	err error
}

// Receive hands the answer to the blocked caller.
func (w *waiter) Receive(_ int, ok bool, err error) { w.ch <- waited{ok, err} }

// do queues req and waits for its answer, or for ctx to end.
func (n *Node) do(ctx context.Context, req redlock.Request) (bool, error) {
	w, _ := n.waiters.Get().(*waiter)
	if w == nil {
		w = &waiter{ch: make(chan waited, 1)}
	}
	n.Start(ctx, req, w, 0)
	select {
	case r := <-w.ch:
		n.waiters.Put(w)
		return r.ok, r.err
	case <-ctx.Done():
		// The answer still comes, to this waiter, which is not reused.
		return false, ctx.Err()
	}
}

// deadlineCtx is a batch worker's reusable context: a deadline, and a Done
// channel that a timer closes at it. Re-armed for each batch, it spares a
// batch the context, timer and channel that context.WithDeadline makes; a
// fresh one replaces it only when a deadline actually passed.
type deadlineCtx struct {
	deadline time.Time
	done     chan struct{}
	expired  atomic.Bool
	timer    *time.Timer
}

func newDeadlineCtx() *deadlineCtx {
	d := &deadlineCtx{done: make(chan struct{})}
	d.timer = time.AfterFunc(time.Hour, func() {
		d.expired.Store(true)
		close(d.done)
	})
	d.timer.Stop()
	return d
}

// arm sets the deadline of the next batch and starts the timer.
func (d *deadlineCtx) arm(deadline time.Time) context.Context {
	d.deadline = deadline
	d.timer.Reset(time.Until(deadline))
	return d
}

// disarm stops the timer; it reports false when the deadline had already
// passed (the context is spent).
func (d *deadlineCtx) disarm() bool { return d.timer.Stop() }

// Deadline returns the batch's deadline.
func (d *deadlineCtx) Deadline() (time.Time, bool) { return d.deadline, true }

// Done is closed when the deadline passes.
func (d *deadlineCtx) Done() <-chan struct{} { return d.done }

// Err is context.DeadlineExceeded once the deadline passed, else nil.
func (d *deadlineCtx) Err() error {
	if d.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

// Value carries no values.
func (d *deadlineCtx) Value(any) any { return nil }
