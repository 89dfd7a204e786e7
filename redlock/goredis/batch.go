package goredis

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/internal/batch"
	"dlm/redlock/scripts"
)

// The batches (redlock/internal/batch): every Acquire, Release,
// ReleaseAnnounce, Extend and Transfer of a Node, blocking or started with
// Start (redlock.AsyncNode), joins the node's queue, and one worker at a
// time sends the whole queue as one pipeline (R15) on one of the client's
// connections, waiting for its replies before the next: the node executes
// the requests in queue order. A batch whose deadline passes closes its
// connection (go-redis drops a connection that timed out), so the requests
// that follow go on another one; only then may a node that was slow run
// them in another order (the keys involved still expire with their ttl).

var (
	_ redlock.BatchNode    = (*Node)(nil)
	_ redlock.TransferNode = (*Node)(nil)
)

// Start queues req and returns (redlock.AsyncNode). The answer goes to
// to.Receive(tag, ...) once the node answered, the request failed, or ctx
// was already done when its batch left.
func (n *Node) Start(ctx context.Context, req redlock.Request, to redlock.Receiver, tag int) {
	n.queue.Start(ctx, req, to, tag)
}

// StartAll queues calls, in order, so that they leave in the same batch
// (redlock.BatchNode).
func (n *Node) StartAll(calls []redlock.Call) { n.queue.StartAll(calls) }

// sender is the state of a node's batch worker, reused from batch to batch
// (one worker runs at a time).
type sender struct {
	cmds    []redis.Cmder
	retries []int
	dctx    *batch.DeadlineCtx
}

// send runs one batch: one pipeline of every request whose context is still
// live, bounded by the latest of their deadlines, then EVAL for the scripts
// the node did not have (NOSCRIPT: a restart, SCRIPT FLUSH).
func (n *Node) send(items []batch.Item) {
	b := &n.sender
	live, deadline, bounded := batch.Live(items)
	if len(live) == 0 {
		return
	}
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
	cmds := b.cmds[:0]
	if len(live) == 1 {
		// A lone request goes as a plain command: a pipeline of one
		// allocates more.
		cmds = append(cmds, n.command(ctx, n.client, live[0].Req, false))
	} else {
		pipe := n.client.Pipeline()
		for _, it := range live {
			cmds = append(cmds, n.command(ctx, pipe, it.Req, false))
		}
		_, _ = pipe.Exec(ctx) // each command holds its own result
	}
	retries := b.retries[:0]
	for i, it := range live {
		if s := n.scriptOf(it.Req.Op); s != nil {
			err := cmds[i].Err()
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
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
		pipe := n.client.Pipeline()
		again := make([]redis.Cmder, 0, len(retries))
		for _, i := range retries {
			again = append(again, n.command(ctx, pipe, live[i].Req, true))
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
	var rerr redis.Error
	return err == nil || errors.As(err, &rerr)
}

// scriptOf returns the script that runs op, nil for an acquisition (SET).
func (n *Node) scriptOf(op redlock.Op) *batch.Script {
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
	return n.release // OpRelease (the queue lets no other op in)
}

// command runs req's command on c (the client, or a pipeline that queues
// it): SET NX PX for an acquisition (R3), else its script by EVALSHA, or
// by EVAL when eval is set or the node is not known to have the script.
func (n *Node) command(ctx context.Context, c redis.Cmdable, req redlock.Request, eval bool) redis.Cmder {
	keys := []string{req.Key}
	var args []any
	switch req.Op {
	case redlock.OpAcquire:
		return c.SetArgs(ctx, req.Key, req.Value, redis.SetArgs{Mode: "NX", TTL: req.TTL})
	case redlock.OpExtend:
		args = []any{req.Value, strconv.FormatInt(req.TTL.Milliseconds(), 10)}
	case redlock.OpReleaseAnnounce:
		args = []any{req.Value, scripts.ChannelPrefix}
	case redlock.OpTransfer:
		args = []any{req.From, req.Value, strconv.FormatInt(req.TTL.Milliseconds(), 10)}
	default: // OpRelease
		args = []any{req.Value}
	}
	s := n.scriptOf(req.Op)
	if eval || !s.Cached.Load() {
		return c.Eval(ctx, s.Src, keys, args...)
	}
	return c.EvalSha(ctx, s.SHA, keys, args...)
}

// answer reads a reply as the blocking method of op returns it: SET NX
// answers OK or nil (held); the scripts answer 1 when they acted.
func answer(op redlock.Op, c redis.Cmder) (bool, error) {
	if op == redlock.OpAcquire {
		switch err := c.Err(); {
		case err == nil:
			return true, nil
		case errors.Is(err, redis.Nil):
			return false, nil
		default:
			return false, err
		}
	}
	v, err := c.(*redis.Cmd).Int64()
	return v == 1 && err == nil, err
}

// do queues req and waits for its answer, or for ctx to end.
func (n *Node) do(ctx context.Context, req redlock.Request) (bool, error) {
	return n.queue.Do(ctx, req)
}

// Queued returns how many requests wait in the node's queue, not yet taken
// into a batch: a gauge of the node's backlog.
func (n *Node) Queued() int { return n.queue.Len() }
