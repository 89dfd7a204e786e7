// Package batch is the per-node request queue of the batching node adapter
// (redlock/rueidis), apart from its driver: every request to a node,
// blocking or started with adapter.AsyncNode.Start, joins the node's queue;
// one worker per node at a time takes the whole queue and hands it to the
// adapter's send function, which puts it on the wire in one write and one
// round trip (R15). The batches are self-clocking: the busier the node, the
// larger each batch, with no flush delay; a lone request goes out at once.
// A node executes its requests in the order they joined the queue, so a
// release never overtakes the acquisition it undoes (R8.5).
//
// The package also gives the send function what it builds a batch from:
// each request's script (Scripts.Of) and the batch script that runs a
// whole batch of releases, extensions and transfers in one call
// (Combined). The listening marker that the batch script reads is kept by
// a Listener (listen.go).
package batch

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

// Item is one request waiting in a node's queue.
type Item struct {
	Ctx context.Context
	Req adapter.Request
	To  adapter.Receiver
	Tag int
}

// Queue is one node's queue and the state of its worker. The zero value is
// not usable: call Init.
type Queue struct {
	mu      sync.Mutex
	queue   []Item
	spare   []Item // the worker's last batch, for reuse
	running bool   // a worker goroutine is draining the queue

	send    func([]Item) // the adapter's: answers every item of a batch
	worker  func()       // q.work as a func value, made once (Init)
	adapter string       // the adapter's name, in errors
	max     int          // the most items in one batch
	allowed []adapter.Op // the adapter's own operations (Allow)
	waiters sync.Pool    // of *waiter, for Do
}

// Init readies q to hand its batches to send, which must answer every item
// (Item.To.Receive), in the order given; adapter names it in errors. A batch
// holds at most max items (max > 0): a longer queue leaves in several
// batches, one after the other, each sent once the one before it returned.
func (q *Queue) Init(adapter string, max int, send func([]Item)) {
	if max <= 0 {
		panic("batch: Init with a batch size of " + strconv.Itoa(max) + ", want > 0")
	}
	q.adapter, q.max, q.send = adapter, max, send
	q.worker = q.work
}

// Allow lets ops, operations of the adapter's own, into q besides
// redlock's; send must know them. Call it after Init, before the first
// request.
func (q *Queue) Allow(ops ...adapter.Op) { q.allowed = append(q.allowed, ops...) }

// Start queues req (adapter.AsyncNode.Start). The answer goes to
// to.Receive(tag, ...) once the node answered, the request failed, or ctx
// was already done when its batch left.
func (q *Queue) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	if err := q.refuse(ctx, req); err != nil {
		to.Receive(tag, false, err)
		return
	}
	q.mu.Lock()
	q.queue = append(q.queue, Item{Ctx: ctx, Req: req, To: to, Tag: tag})
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go q.worker()
	}
}

// StartAll queues calls, in order, so that they leave in the same batch
// (adapter.BatchNode.StartAll).
func (q *Queue) StartAll(calls []adapter.Call) {
	q.mu.Lock()
	for _, cl := range calls {
		if err := q.refuse(cl.Ctx, cl.Req); err != nil {
			defer cl.To.Receive(cl.Tag, false, err) // outside q.mu
			continue
		}
		q.queue = append(q.queue, Item{Ctx: cl.Ctx, Req: cl.Req, To: cl.To, Tag: cl.Tag})
	}
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go q.worker()
	}
}

// Len returns how many requests wait in q, not yet taken into a batch.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// refuse is the error that answers a request at once: its context is done,
// or its operation is not one of redlock's.
func (q *Queue) refuse(ctx context.Context, req adapter.Request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch req.Op {
	case adapter.OpAcquire, adapter.OpRelease, adapter.OpReleaseAnnounce, adapter.OpExtend, adapter.OpTransfer,
		adapter.OpAcquireAll, adapter.OpReleaseAll, adapter.OpReleaseAllAnnounce, adapter.OpExtendAll:
		return nil
	}
	for _, op := range q.allowed {
		if op == req.Op {
			return nil
		}
	}
	return fmt.Errorf("%s: unknown operation %v: expected acquire, release, release-announce, extend, transfer or their -all forms for a set", q.adapter, req.Op)
}

// work sends the queue in batches, the oldest items first and at most q.max
// at a time, until it finds it empty.
func (q *Queue) work() {
	q.mu.Lock()
	batch := q.spare
	q.spare = nil
	for len(q.queue) > 0 {
		if len(q.queue) <= q.max {
			batch, q.queue = q.queue, batch[:0]
		} else {
			batch = append(batch[:0], q.queue[:q.max]...)
			rest := copy(q.queue, q.queue[q.max:])
			clear(q.queue[rest:])
			q.queue = q.queue[:rest]
		}
		q.mu.Unlock()
		q.send(batch)
		clear(batch) // drop the references to contexts and receivers
		// The callers the batch just answered mostly send their next
		// request at once: one yield lets them queue it, so that it
		// leaves in the next batch instead of in one of its own.
		runtime.Gosched()
		q.mu.Lock()
	}
	q.running = false
	q.queue, q.spare = batch[:0], q.queue[:0] // the next Start appends to a buffer
	q.mu.Unlock()
}

// Live answers the items whose context is already done with its error and
// returns the others, reusing batch's array, with the latest of their
// deadlines (bounded is false when one of them has none): a batch is bounded
// by its latest deadline, so that one caller's short deadline does not fail
// the others.
func Live(batch []Item) (live []Item, deadline time.Time, bounded bool) {
	bounded = true
	live = batch[:0]
	for _, it := range batch {
		if err := it.Ctx.Err(); err != nil {
			it.To.Receive(it.Tag, false, err)
			continue
		}
		if d, ok := it.Ctx.Deadline(); !ok {
			bounded = false
		} else if d.After(deadline) {
			deadline = d
		}
		live = append(live, it)
	}
	return live, deadline, bounded
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

// Do queues req and waits for its answer, or for ctx to end: the blocking
// methods of a node go through the same queue as Start, in the same order.
func (q *Queue) Do(ctx context.Context, req adapter.Request) (bool, error) {
	w, _ := q.waiters.Get().(*waiter)
	if w == nil {
		w = &waiter{ch: make(chan waited, 1)}
	}
	q.Start(ctx, req, w, 0)
	select {
	case r := <-w.ch:
		q.waiters.Put(w)
		return r.ok, r.err
	case <-ctx.Done():
		// The answer still comes, to this waiter, which is not reused.
		return false, ctx.Err()
	}
}

// DeadlineCtx is a batch worker's reusable context: a deadline, and a Done
// channel that a timer closes at it. Re-armed for each batch, it spares a
// batch the context, timer and channel that context.WithDeadline makes; a
// fresh one replaces it only when a deadline actually passed.
type DeadlineCtx struct {
	deadline time.Time
	done     chan struct{}
	expired  atomic.Bool
	timer    *time.Timer
}

// NewDeadlineCtx returns a disarmed DeadlineCtx.
func NewDeadlineCtx() *DeadlineCtx {
	d := &DeadlineCtx{done: make(chan struct{})}
	d.timer = time.AfterFunc(time.Hour, func() {
		d.expired.Store(true)
		close(d.done)
	})
	d.timer.Stop()
	return d
}

// Arm sets the deadline of the next batch and starts the timer.
func (d *DeadlineCtx) Arm(deadline time.Time) context.Context {
	d.deadline = deadline
	d.timer.Reset(time.Until(deadline))
	return d
}

// Disarm stops the timer; it reports false when the deadline had already
// passed (the context is spent and must not be armed again).
func (d *DeadlineCtx) Disarm() bool { return d.timer.Stop() }

// Deadline returns the batch's deadline.
func (d *DeadlineCtx) Deadline() (time.Time, bool) { return d.deadline, true }

// Done is closed when the deadline passes.
func (d *DeadlineCtx) Done() <-chan struct{} { return d.done }

// Err is context.DeadlineExceeded once the deadline passed, else nil.
func (d *DeadlineCtx) Err() error {
	if d.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

// Value carries no values.
func (d *DeadlineCtx) Value(any) any { return nil }

// Script is one embedded Lua script and its SHA1, computed once.
//
// Inside a batch, a script goes by EVALSHA only when nothing behind it in
// the batch touches its key (Tails); every other script goes by EVAL. A
// node that lost its scripts (a restart, SCRIPT FLUSH) answers an EVALSHA
// with NOSCRIPT while it runs the commands behind it, and the adapter sends
// the script again by EVAL after the batch: moved behind requests of other
// keys only, which commute with it, the request runs in Start order for
// every key it touches. A script the node is not known to have (Cached
// false) goes by EVAL everywhere.
type Script struct {
	Src, SHA string
	// Cached is set once the node ran the script (by EVAL or EVALSHA), and
	// cleared when it answers NOSCRIPT (a restart, SCRIPT FLUSH).
	Cached atomic.Bool
}

// NewScript returns src with its SHA1.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{Src: src, SHA: hex.EncodeToString(sum[:])}
}

// Tails finds the requests of a batch that no later request of the batch
// touches the key of: the only ones a NOSCRIPT retry, which runs after the
// batch, may move (Script). Its buffers are reused from batch to batch; the
// zero value is ready.
type Tails struct {
	seen map[string]struct{}
	tail []bool
}

// Mark returns, for each item of batch, whether no later item has its key.
// The result is valid until the next Mark.
func (t *Tails) Mark(batch []Item) []bool {
	tail := t.tail[:0]
	if len(batch) == 1 {
		t.tail = append(tail, true)
		return t.tail
	}
	if t.seen == nil {
		t.seen = make(map[string]struct{}, len(batch))
	}
	clear(t.seen)
	tail = append(tail, make([]bool, len(batch))...)
	// From the last item back: an item is a tail when none of its keys
	// was seen behind it. A key is new when adding it grows the set: one
	// map operation per key.
	for i := len(batch) - 1; i >= 0; i-- {
		it := &batch[i]
		last := t.add(it.Req.Key)
		for _, k := range it.Req.Keys { // a set's keys (adapter.MultiNode)
			last = t.add(k) && last
		}
		tail[i] = last
	}
	t.tail = tail
	return tail
}

// add adds key to the keys seen and reports whether it was not there yet.
func (t *Tails) add(key string) bool {
	n := len(t.seen)
	t.seen[key] = struct{}{}
	return len(t.seen) > n
}

// Scripts are the scripts of every batched lock operation but the SET NX
// PX of an acquisition (R3): one resource's release, announced release,
// extension and transfer, and the set scripts; shared by the adapters that
// batch through a Queue, which pick a request's script with Of.
type Scripts struct {
	Release, Publish, Extend, Transfer *Script
	Sets                               SetScripts
	// Batch runs a whole batch of single-resource requests (Combined).
	Batch *Script
}

// NewScripts returns the batched scripts of redlock/scripts.
func NewScripts() Scripts {
	return Scripts{
		Release:  NewScript(scripts.Release),
		Publish:  NewScript(scripts.ReleasePublish),
		Extend:   NewScript(scripts.Extend),
		Transfer: NewScript(scripts.Transfer),
		Sets:     NewSetScripts(),
		Batch:    NewScript(scripts.Batch),
	}
}

// Of returns the script that runs op, or nil for the acquisition of one
// resource (SET NX PX).
func (s Scripts) Of(op adapter.Op) *Script {
	if op.IsMulti() {
		return s.Sets.Of(op)
	}
	switch op {
	case adapter.OpAcquire:
		return nil
	case adapter.OpExtend:
		return s.Extend
	case adapter.OpTransfer:
		return s.Transfer
	case adapter.OpReleaseAnnounce:
		return s.Publish
	}
	return s.Release // OpRelease (a Queue lets no other op in)
}

// SetScripts are the scripts of the batched operations on a set of
// resources (adapter.MultiNode: AcquireAll, ReleaseAll, ExtendAll), shared
// by the adapters that batch through a Queue.
type SetScripts struct {
	Acquire, Release, Extend *Script
}

// NewSetScripts returns the set scripts of redlock/scripts.
func NewSetScripts() SetScripts {
	return SetScripts{
		Acquire: NewScript(scripts.AcquireAll),
		Release: NewScript(scripts.ReleaseAll),
		Extend:  NewScript(scripts.ExtendAll),
	}
}

// Of returns the script that runs op, an operation on a set (op.IsMulti).
func (s SetScripts) Of(op adapter.Op) *Script {
	switch op {
	case adapter.OpAcquireAll:
		return s.Acquire
	case adapter.OpExtendAll:
		return s.Extend
	}
	return s.Release // OpReleaseAll, OpReleaseAllAnnounce
}

// Sharded returns s with the scripts that announce releases in their
// sharded form (scripts.Sharded), for a node that is a Redis Cluster.
func (s Scripts) Sharded() Scripts {
	s.Publish = NewScript(scripts.Sharded(scripts.ReleasePublish))
	s.Sets.Release = NewScript(scripts.Sharded(scripts.ReleaseAll))
	return s
}

// Combined plans, builds and answers a batch sent as the SET NX PX of each
// of its acquisitions (R3), then one call of the batch script
// (redlock/scripts/batch.lua) for all of its releases, announced releases,
// extensions and transfers, in their order: a node then starts one script
// per batch instead of one per release, and announces a release only where
// a client listens. An acquisition that follows another request of its key
// in the batch runs in the script, after it; every other one goes before
// the script, which no other request of its key precedes: every key's
// requests run in order. The script, the batch's last command, is the only
// one a NOSCRIPT retry moves. Its
// buffers are reused from batch to batch; the zero value is ready. One
// batch worker uses it at a time.
type Combined struct {
	acq, scr []int // indexes into the batch: acquisitions, scripted requests
	seen     map[string]struct{}
	ops      []byte
	keys     []string
	args     []string
}

// CombinedMin is the fewest scripted requests (not acquisitions) a batch
// must hold to go as one call of the batch script: one goes by its own
// script, which costs the node as much.
const CombinedMin = 2

// letter is op's letter in the batch script, 0 for an operation it does
// not run.
func letter(op adapter.Op) byte {
	switch op {
	case adapter.OpAcquire:
		return 'a'
	case adapter.OpRelease:
		return 'r'
	case adapter.OpReleaseAnnounce:
		return 'p'
	case adapter.OpExtend:
		return 'e'
	case adapter.OpTransfer:
		return 't'
	}
	return 0
}

// Plan reports whether batch goes as its acquisitions, then one call of the
// batch script: every request is on a single resource and CombinedMin of
// them or more go in the script, which runs every request but the
// acquisitions that no other request of their key precedes in the batch.
// Then Acquisitions lists those, in order.
func (c *Combined) Plan(batch []Item) bool {
	c.acq, c.scr = c.acq[:0], c.scr[:0]
	if len(batch) < CombinedMin {
		return false
	}
	if c.seen == nil {
		c.seen = map[string]struct{}{}
	}
	clear(c.seen)
	for i := range batch {
		r := &batch[i].Req
		if r.Op == adapter.OpAcquire {
			if _, ok := c.seen[r.Key]; !ok {
				c.acq = append(c.acq, i)
				continue
			}
			// It follows a scripted request of its key: it runs in
			// the script, after it.
		} else if letter(r.Op) == 0 {
			return false
		}
		c.seen[r.Key] = struct{}{}
		c.scr = append(c.scr, i)
	}
	return len(c.scr) >= CombinedMin
}

// Acquisitions returns the indexes in the planned batch of its
// acquisitions, in order (Plan).
func (c *Combined) Acquisitions() []int { return c.acq }

// Build returns the keys and the arguments (ARGV) of the batch script's
// call for the planned batch, ttl formatting an expiry in milliseconds and
// prefix the release channels' prefix. They are valid until the next Plan.
func (c *Combined) Build(batch []Item, prefix string, ttl func(time.Duration) string) (keys, args []string) {
	ops, keys, args := c.ops[:0], c.keys[:0], c.args[:0]
	for _, i := range c.scr {
		r := &batch[i].Req
		ops = append(ops, letter(r.Op))
		keys = append(keys, r.Key)
	}
	args = append(args, string(ops), prefix, scripts.ListenKey)
	for _, i := range c.scr {
		r := &batch[i].Req
		switch r.Op {
		case adapter.OpAcquire, adapter.OpExtend:
			args = append(args, r.Value, ttl(r.TTL))
		case adapter.OpTransfer:
			args = append(args, r.From, r.Value, ttl(r.TTL))
		default:
			args = append(args, r.Value)
		}
	}
	c.ops, c.keys, c.args = ops, keys, args
	return keys, args
}

// errReplyLength is the error of every scripted request of a batch whose
// script answered another number of results than it ran requests.
var errReplyLength = errors.New("batch: the batch script's reply does not have one result per request")

// Answer answers the scripted requests of the planned batch from the batch
// script's reply: reply is its result, or err the error of the whole call
// (each of them gets it). A request that failed on the node gets nodeErr of
// the node's error line.
func (c *Combined) Answer(batch []Item, reply string, err error, nodeErr func(msg string) error) {
	codes, errLines, _ := strings.Cut(reply, "\n")
	if err == nil && len(codes) != len(c.scr) {
		err = errReplyLength
	}
	for j, i := range c.scr {
		it := batch[i]
		switch {
		case err != nil:
			it.To.Receive(it.Tag, false, err)
		case codes[j] == '1':
			it.To.Receive(it.Tag, true, nil)
		case codes[j] == '0':
			it.To.Receive(it.Tag, false, nil)
		default:
			line, rest, _ := strings.Cut(errLines, "\n")
			errLines = rest
			it.To.Receive(it.Tag, false, nodeErr(line))
		}
	}
}

// TTLArg formats an expiry in milliseconds as a command's argument, once
// per distinct expiry: a client's requests mostly share one. The zero
// value is ready; one batch worker uses it at a time.
type TTLArg struct {
	ttl time.Duration
	ms  string
}

// Of returns ttl in milliseconds, as a decimal string.
func (a *TTLArg) Of(ttl time.Duration) string {
	if ttl != a.ttl || a.ms == "" {
		a.ttl, a.ms = ttl, strconv.FormatInt(ttl.Milliseconds(), 10)
	}
	return a.ms
}
