package goredis

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
)

// The batches (redlock/internal/batch): every Acquire, Release,
// ReleaseAnnounce, Extend and Transfer of a Node, blocking or started with
// Start (adapter.AsyncNode), joins the node's queue, and one worker at a
// time takes it, at most MaxBatch requests at a time, and submits them in
// queue order to the client's AsyncAutoPipeline in its ordered full-duplex
// form: one connection, a writer that streams the commands without waiting
// for replies, and a reader that completes them in order. The worker waits
// for a batch's replies, or for its deadline, before it takes the next
// batch, as over rueidis: the busier the node, the larger the batches.
//
// Deadlines are the adapter's, not go-redis's: a batch still waiting at the
// latest deadline among its requests is answered with
// context.DeadlineExceeded, while its commands stay on the connection and
// their replies, when they come, are read and dropped. go-redis never sees
// a deadline pass on a read, so it never closes the connection and dials
// again under the requests behind (the reason the one-pipeline-per-batch
// design failed the checker's slow-node scenario). Only a node silent for
// connTimeout loses its connection.
//
// Scripts go by EVALSHA only as the last request of their batch on their
// key, else by EVAL (batch.Tails, as over rueidis; see send).

// MaxBatch is the most requests a Node submits at once: a longer queue
// leaves in several batches, each submitted right after the one before.
const MaxBatch = 1000

var _ adapter.BatchNode = (*Node)(nil)

// streamOptions is the autopipeline the node's requests go through: ordered
// (one stream, the default), full-duplex, and held for an hour under load
// (go-redis's default of 5 s would drain the stream every 5 s to hand the
// connection back, a pause of one round trip of a slow node).
func streamOptions() *redis.AutoPipelineOptions {
	o := redis.DefaultAutoPipelineOptions()
	o.FullDuplex = true
	o.FullDuplexMaxHold = time.Hour
	return o
}

// stream is the node's way to the connection: the client's ordered
// full-duplex autopipeline, found by NewNode, or nil when the client cannot
// give one (then each batch is one pipeline, sent after the one before
// returned: pipeline). Its other fields belong to the queue's worker.
type stream struct {
	ap      *redis.AutoPipeliner
	probe   notYet             // asks a future whether it completed
	dctx    *batch.DeadlineCtx // the batch deadline, reused
	tails   batch.Tails
	retries []batch.Item
	pipe    pipeline
}

// open finds the client's ordered full-duplex autopipeline (it dials
// nothing yet).
func (s *stream) open(c redis.UniversalClient) {
	rc, ok := c.(*redis.Client)
	if !ok {
		return
	}
	ap, err := rc.AsyncAutoPipelineWithOptions(streamOptions())
	if err != nil {
		return
	}
	// The client's first configuration wins: use it only if it keeps order.
	if cfg := ap.Config(); cfg.FullDuplex && !cfg.Unordered && cfg.NumShards <= 1 && cfg.MaxConcurrentBatches <= 1 {
		s.ap, s.probe = ap, newNotYet()
	}
}

// warm dials the stream's connection in the background, with a PING, so
// that the first requests of a client that Dial made do not wait for the
// dial (rueidis dials its clients when they are made). It gives up after
// 2 s; the stream dials again on use.
func (s *stream) warm() {
	if s.ap == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.ap.Submit(ctx, redis.NewCmd(ctx, "ping")).WaitContext(ctx)
	}()
}

// Start queues req and returns (adapter.AsyncNode). The answer goes to
// to.Receive(tag, ...) once the node answered, by the latest deadline of
// the requests of its batch, or at once when ctx is already done.
func (n *Node) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	n.queue.Start(ctx, req, to, tag)
}

// StartAll queues calls, in order, so that they leave in the same batch
// (adapter.BatchNode): the hand-off sends a release and the next waiter's
// acquisition together.
func (n *Node) StartAll(calls []adapter.Call) { n.queue.StartAll(calls) }

// send submits one batch to the stream and waits for its replies, or for
// the latest deadline of its requests, whichever comes first. At the
// deadline it answers the batch with context.DeadlineExceeded and returns,
// and the next batch is streamed behind it on the same connection (as
// rueidis does with a DoMulti whose context ends). When the replies came
// in time, the scripts the node did not have (NOSCRIPT: a restart, SCRIPT
// FLUSH) are sent again by EVAL before the next batch; only the last
// request of the batch on its key went by EVALSHA (batch.Tails), so a
// retry moves a request behind other keys' requests only. A batch whose
// deadline passed is not retried: a script answered NOSCRIPT did not run,
// and the client was told it may not have.
func (n *Node) send(items []batch.Item) {
	live, deadline, bounded := batch.Live(items)
	if len(live) == 0 {
		return
	}
	s := &n.stream
	if s.ap == nil {
		n.sendPipeline(live, deadline, bounded)
		return
	}
	tail := s.tails.Mark(live)
	// Not reused from batch to batch: a late reply may still fill them.
	cmds := make([]redis.Cmder, len(live))
	buf := make([]any, 0, maxArgs*len(live))
	for i, it := range live {
		cmds[i], buf = n.command(it.Ctx, it.Req, !tail[i], buf)
	}
	if !s.await(n.submit(live, cmds), deadline, bounded) {
		for _, it := range live {
			it.To.Receive(it.Tag, false, context.DeadlineExceeded)
		}
		return
	}
	retries := s.retries[:0]
	for i, it := range live {
		if sc := n.scriptOf(it.Req.Op); sc != nil {
			err := cmds[i].Err()
			if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				sc.Cached.Store(false) // restarted, or SCRIPT FLUSH
				retries = append(retries, it)
				continue
			}
			if ran(err) {
				sc.Cached.Store(true) // it ran, by EVAL or EVALSHA
			}
		}
		ok, err := answer(it.Req.Op, cmds[i])
		it.To.Receive(it.Tag, ok, err)
	}
	s.retries = retries[:0]
	if len(retries) == 0 {
		return
	}
	again := make([]redis.Cmder, len(retries))
	buf = make([]any, 0, maxArgs*len(retries))
	for i, it := range retries {
		again[i], buf = n.command(it.Ctx, it.Req, true, buf)
	}
	inTime := s.await(n.submit(retries, again), deadline, bounded)
	for i, it := range retries {
		if !inTime {
			it.To.Receive(it.Tag, false, context.DeadlineExceeded)
			continue
		}
		if ran(again[i].Err()) {
			n.scriptOf(it.Req.Op).Cached.Store(true)
		}
		ok, err := answer(it.Req.Op, again[i])
		it.To.Receive(it.Tag, ok, err)
	}
	clear(retries)
}

// submit submits cmds, the commands of items, in order, and returns their
// futures. Submit returns at once on the deferred face; a command it did
// not submit (the request's context ended while it waited for room, the
// client is closed) comes back already failed. Once submitted, go-redis no
// longer looks at the context. A command behind one that was not submitted
// is not submitted either, with the same error (a zero future): it would
// run out of order.
func (n *Node) submit(items []batch.Item, cmds []redis.Cmder) []redis.AutoFuture {
	futs := make([]redis.AutoFuture, len(cmds))
	var failed error
	for i, it := range items {
		if failed != nil {
			cmds[i].SetErr(failed)
			continue
		}
		futs[i] = n.stream.ap.Submit(it.Ctx, cmds[i])
		if err := futs[i].WaitContext(n.stream.probe); err != errNotYet && err != nil && !isReply(err) {
			failed = err // refused at once, not a reply
		}
	}
	return futs
}

// isReply reports whether err is the node's answer (a Redis error reply).
func isReply(err error) bool {
	_, ok := err.(redis.Error)
	return ok
}

// errNotYet is notYet's Err: a future that WaitContext(notYet{}) answers
// with it has not completed.
var errNotYet = errors.New("goredis: not completed yet")

// notYet is a context that is already done, with its own error, to ask a
// future whether it completed without waiting.
type notYet struct{ done chan struct{} }

func newNotYet() notYet {
	c := make(chan struct{})
	close(c)
	return notYet{c}
}

func (notYet) Deadline() (time.Time, bool) { return time.Time{}, false }
func (n notYet) Done() <-chan struct{}     { return n.done }
func (notYet) Err() error                  { return errNotYet }
func (notYet) Value(any) any               { return nil }

// await waits for the futures until deadline (when bounded), and reports
// whether they all completed. The deadline context is reused from batch to
// batch until a deadline passes (batch.DeadlineCtx).
func (s *stream) await(futs []redis.AutoFuture, deadline time.Time, bounded bool) bool {
	ctx := context.Context(context.Background())
	if bounded {
		if s.dctx == nil {
			s.dctx = batch.NewDeadlineCtx()
		}
		ctx = s.dctx.Arm(deadline)
		defer func() {
			if !s.dctx.Disarm() {
				s.dctx = nil // spent: its Done channel is closed
			}
		}()
	}
	for _, f := range futs {
		if f.Cmd() == nil {
			continue // not submitted
		}
		if err := f.WaitContext(ctx); err != nil && ctx.Err() != nil {
			return false
		}
	}
	return true
}

// command builds req's command: SET NX PX for an acquisition (R3), else its
// script, by EVAL when eval is set or the node is not known to have it,
// else by EVALSHA. Its arguments are appended to buf, the batch's (one
// allocation per batch), and the grown buf is returned.
func (n *Node) command(ctx context.Context, req adapter.Request, eval bool, buf []any) (redis.Cmder, []any) {
	start := len(buf)
	if req.Op == adapter.OpAcquire {
		buf = append(buf, "set", req.Key, req.Value, "nx", "px", req.TTL.Milliseconds())
		return redis.NewCmd(ctx, buf[start:len(buf):len(buf)]...), buf
	}
	s := n.scriptOf(req.Op)
	if eval || !s.Cached.Load() {
		buf = append(buf, "eval", s.src, 1, req.Key)
	} else {
		buf = append(buf, "evalsha", s.sha, 1, req.Key)
	}
	switch req.Op {
	case adapter.OpExtend:
		buf = append(buf, req.Value, strconv.FormatInt(req.TTL.Milliseconds(), 10))
	case adapter.OpReleaseAnnounce:
		buf = append(buf, req.Value, ChannelPrefix)
	case adapter.OpTransfer:
		buf = append(buf, req.From, req.Value, strconv.FormatInt(req.TTL.Milliseconds(), 10))
	default: // OpRelease
		buf = append(buf, req.Value)
	}
	return redis.NewCmd(ctx, buf[start:len(buf):len(buf)]...), buf
}

// maxArgs is the most arguments a command of the node has (Transfer).
const maxArgs = 7

// script is one of the node's scripts with its source and SHA1 boxed once
// as command arguments.
type script struct {
	*batch.Script
	src, sha any
}

func newScript(src string) *script {
	s := batch.NewScript(src)
	return &script{Script: s, src: s.Src, sha: s.SHA}
}

// scriptOf returns the script that runs op, nil for an acquisition (SET).
func (n *Node) scriptOf(op adapter.Op) *script {
	switch op {
	case adapter.OpAcquire:
		return nil
	case adapter.OpExtend:
		return n.extend
	case adapter.OpReleaseAnnounce:
		return n.publish
	case adapter.OpTransfer:
		return n.handOn
	}
	return n.release // OpRelease (the queue lets no other op in)
}

// answer reads a reply as the blocking method of op returns it: SET NX
// answers OK or nil (held); the scripts answer 1 when they acted.
func answer(op adapter.Op, c redis.Cmder) (bool, error) {
	if op == adapter.OpAcquire {
		return answerSet(c.Err())
	}
	v, err := c.(*redis.Cmd).Int64()
	return v == 1 && err == nil, err
}

// pipeline is the state of the one-batch-at-a-time path, for a client
// without an ordered full-duplex autopipeline, reused from batch to batch.
type pipeline struct {
	cmds    []redis.Cmder
	retries []int
	tails   batch.Tails
	dctx    *batch.DeadlineCtx
}

// sendPipeline sends one batch as one pipeline and waits for its replies,
// bounded by the latest deadline of its requests; then EVAL for the scripts
// the node did not have (NOSCRIPT). Only the last request of the batch on
// its key goes by EVALSHA, so a retry moves a request behind other keys'
// requests only (batch.Tails). A deadline that passes closes the connection
// (go-redis drops a connection that timed out).
func (n *Node) sendPipeline(live []batch.Item, deadline time.Time, bounded bool) {
	b := &n.stream.pipe
	ctx := context.Background()
	if bounded {
		if b.dctx == nil {
			b.dctx = batch.NewDeadlineCtx()
		}
		ctx = b.dctx.Arm(deadline)
		defer func() {
			if !b.dctx.Disarm() {
				b.dctx = nil // spent: its Done channel is closed
			}
		}()
	}
	pipe := n.client.Pipeline()
	cmds := b.cmds[:0]
	tail := b.tails.Mark(live)
	buf := make([]any, 0, maxArgs*len(live))
	for i, it := range live {
		var c redis.Cmder
		c, buf = n.command(ctx, it.Req, !tail[i], buf)
		_ = pipe.Process(ctx, c)
		cmds = append(cmds, c)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own result
	retries := b.retries[:0]
	for i, it := range live {
		if s := n.scriptOf(it.Req.Op); s != nil {
			err := cmds[i].Err()
			if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				s.Cached.Store(false) // restarted, or SCRIPT FLUSH
				retries = append(retries, i)
				continue
			}
			if ran(err) {
				s.Cached.Store(true) // it ran, by EVAL or EVALSHA
			}
		}
		ok, err := answer(it.Req.Op, cmds[i])
		it.To.Receive(it.Tag, ok, err)
	}
	if len(retries) > 0 {
		pipe = n.client.Pipeline()
		again := make([]redis.Cmder, 0, len(retries))
		buf = buf[:0:0]
		for _, i := range retries {
			var c redis.Cmder
			c, buf = n.command(ctx, live[i].Req, true, buf)
			_ = pipe.Process(ctx, c)
			again = append(again, c)
		}
		_, _ = pipe.Exec(ctx)
		for j, i := range retries {
			if ran(again[j].Err()) {
				n.scriptOf(live[i].Req.Op).Cached.Store(true)
			}
			ok, err := answer(live[i].Req.Op, again[j])
			live[i].To.Receive(live[i].Tag, ok, err)
		}
	}
	clear(cmds)
	b.cmds, b.retries = cmds[:0], retries[:0]
}

// ran reports whether a script's reply shows that the node ran it: no
// error, or an error from the node itself rather than from the connection.
func ran(err error) bool {
	_, isRedis := err.(redis.Error)
	return err == nil || isRedis
}
