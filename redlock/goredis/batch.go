package goredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
	"dlm/redlock/internal/slots"
)

// The batches (redlock/internal/batch), as in redlock/rueidis: every
// Acquire, Release and Extend of a pipelined Node, blocking or started with
// Start (adapter.AsyncNode), joins the node's queue, and one worker at a
// time writes the whole queue on the node's own connection (conn.go) as one
// pipeline (R15), in queue order, and waits for its replies or its
// deadline, whichever is first; a batch written while the connection
// still waits for the replies of one that timed out (a node answering
// late) is not waited for (sendAhead), unless it may need EVAL after a
// NOSCRIPT.

// MaxBatch is the most requests a Node writes in one pipeline; a longer
// queue leaves in several, one after the other.
const MaxBatch = 1000

// sender is the state of a node's batch worker, reused from batch to batch
// (one worker runs at a time).
type sender struct {
	buf      []byte
	retries  []int
	dctx     *batch.DeadlineCtx
	tails    batch.Tails
	combined batch.Combined
	ttl      batch.TTLArg
	// building is held by a cluster batch's goroutine, one per master,
	// while it formats its commands (ttl serves one at a time).
	building sync.Mutex
}

var _ adapter.BatchNode = (*Node)(nil)

// Start queues req and returns (adapter.AsyncNode). The answer goes to
// to.Receive(tag, ...) once the node answered, the request failed, or ctx
// ended. A Node over a client it cannot pipeline on (see NewNode) runs the
// blocking method on a goroutine instead, after every earlier request on
// the same key (ordered.go).
func (n *Node) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	if n.cluster != nil && req.Op.IsMulti() {
		n.queue.StartAll(slots.SplitCalls([]adapter.Call{{Ctx: ctx, Req: req, To: to, Tag: tag}}, n.queue.StartAll)) // cluster.go
		return
	}
	if n.batched() {
		n.queue.Start(ctx, req, to, tag)
		return
	}
	n.order.run(ctx, req, to, tag, n.blocking) // ordered.go
}

// StartAll is Start for each of calls, in order, in one batch
// (adapter.BatchNode).
func (n *Node) StartAll(calls []adapter.Call) {
	if n.cluster != nil {
		calls = slots.SplitCalls(calls, n.queue.StartAll) // cluster.go
	}
	if n.batched() {
		n.queue.StartAll(calls)
		return
	}
	for _, c := range calls {
		n.Start(c.Ctx, c.Req, c.To, c.Tag)
	}
}

// blocking runs req by go-redis (a Node that does not pipeline).
func (n *Node) blocking(ctx context.Context, req adapter.Request) (bool, error) {
	switch req.Op {
	case adapter.OpAcquire:
		return n.goAcquire(ctx, req.Key, req.Value, req.TTL)
	case adapter.OpRelease:
		return n.goRelease(ctx, req.Key, req.Value)
	case adapter.OpReleaseAnnounce:
		return n.goReleaseAnnounce(ctx, req.Key, req.Value)
	case adapter.OpExtend:
		return n.goExtend(ctx, req.Key, req.Value, req.TTL)
	case adapter.OpTransfer:
		return n.goTransfer(ctx, req.Key, req.From, req.Value, req.TTL)
	case adapter.OpAcquireAll:
		return n.AcquireAll(ctx, req.Keys, req.Value, req.TTL)
	case adapter.OpReleaseAll, adapter.OpReleaseAllAnnounce:
		return n.ReleaseAll(ctx, req.Keys, req.Value, req.Op == adapter.OpReleaseAllAnnounce)
	case adapter.OpExtendAll:
		return n.ExtendAll(ctx, req.Keys, req.Value, req.TTL)
	}
	return false, fmt.Errorf("goredis: unknown operation %v: expected acquire, release, extend, transfer or their -all forms for a set", req.Op)
}

// send runs one batch: one pipeline of every request whose context is
// still live, bounded by the latest of their deadlines (so that one
// caller's short deadline does not fail the others), then EVAL for the
// scripts the node did not have (NOSCRIPT: a restart, SCRIPT FLUSH). Only a
// script that is the last request of the batch on its key goes by EVALSHA
// (batch.Tails), so the retry moves it behind other keys' requests only.
func (n *Node) send(items []batch.Item) {
	s := &n.sender
	live, deadline, bounded := batch.Live(items)
	if len(live) == 0 {
		return
	}
	ctx := context.Background()
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
	if n.cluster == nil {
		if live = n.reached(ctx, live); len(live) == 0 {
			return
		}
	}
	if n.cluster == nil && s.combined.Plan(live) { // one script: a cluster's keys lie in many slots
		n.sendCombined(ctx, live)
		return
	}
	tail := s.tails.Mark(live)
	var res []reply
	var err error
	if n.cluster != nil {
		res, err = n.clusterTrip(ctx, live, func(i int) bool { return !tail[i] }) // cluster.go
	} else {
		buf := s.buf[:0]
		sha := false // a request goes by EVALSHA, and may need EVAL after
		for i, it := range live {
			if sc, ok := it.To.(*scriptCall); ok && it.Req.Op >= opEval {
				buf = sc.command(buf) // script.go
				sha = true
				continue
			}
			eval := !tail[i]
			if sc := n.scriptOf(it.Req.Op); sc != nil && !eval {
				// Decided once: the script may be marked cached
				// meanwhile by a batch answered ahead (sendAhead).
				eval = !sc.Cached.Load()
				sha = sha || !eval
			}
			buf = n.command(buf, it.Req, eval)
		}
		s.buf = buf
		if !sha && n.pipe.backlog() {
			n.sendAhead(live, deadline, bounded, buf)
			return
		}
		res, err = n.roundTrip(ctx, buf, len(live))
	}
	if err != nil {
		for _, it := range live {
			it.To.Receive(it.Tag, false, err)
		}
		return
	}
	retries := s.retries[:0]
	for i, it := range live {
		if res[i].kind == answered { // by clusterTrip (cluster.go)
			continue
		}
		if sc, ok := it.To.(*scriptCall); ok && it.Req.Op >= opEval {
			sc.res = res[i] // read once Receive closed sc.done
			it.To.Receive(it.Tag, false, nil)
			continue
		}
		if sc := n.scriptOf(it.Req.Op); sc != nil {
			if r := res[i]; r.kind == '-' && strings.HasPrefix(r.str, "NOSCRIPT") {
				sc.Cached.Store(false) // restarted, or SCRIPT FLUSH
				retries = append(retries, i)
				continue
			}
			sc.Cached.Store(true) // it ran, by EVAL or EVALSHA
		}
		ok, err := answer(it.Req.Op, res[i])
		it.To.Receive(it.Tag, ok, err)
	}
	s.retries = retries[:0]
	if len(retries) == 0 {
		return
	}
	again := make([]batch.Item, len(retries))
	for j, i := range retries {
		again[j] = live[i]
	}
	if n.cluster != nil {
		res, err = n.clusterTrip(ctx, again, func(int) bool { return true })
	} else {
		buf := s.buf[:0]
		for _, it := range again {
			buf = n.command(buf, it.Req, true)
		}
		s.buf = buf
		res, err = n.roundTrip(ctx, buf, len(again))
	}
	for j, i := range retries {
		if err != nil {
			live[i].To.Receive(live[i].Tag, false, err)
			continue
		}
		if res[j].kind == answered {
			continue
		}
		n.scriptOf(live[i].Req.Op).Cached.Store(true)
		ok, err := answer(live[i].Req.Op, res[j])
		live[i].To.Receive(live[i].Tag, ok, err)
	}
}

// sendAhead writes a batch of requests none of which goes by EVALSHA
// (buf, for live, whose latest deadline is deadline when bounded) on the
// node's connection and hands their answers on when they come, or at the
// deadline, without waiting for them: the node's next batch is written at
// once. It is the way of a batch written while the connection still
// waits for the replies of a batch that timed out (the node answers
// late): waiting for it held the next batch, say the next attempt's
// acquisition behind the last attempt's release, for the release's whole
// deadline, and a node answering within a grant's patience was never
// granted (a new client over nodes 4 s late at ttl 10 s: not within
// 40 s). A batch that may need EVAL after a NOSCRIPT is still waited
// for, so that its second try runs before the batches behind it.
func (n *Node) sendAhead(live []batch.Item, deadline time.Time, bounded bool, buf []byte) {
	f, err := n.pipe.write(context.Background(), buf, len(live))
	if err != nil {
		for _, it := range live {
			it.To.Receive(it.Tag, false, err)
		}
		return
	}
	items := slices.Clone(live) // live's array is the queue's
	go func() {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if bounded {
			ctx, cancel = context.WithDeadline(ctx, deadline)
		}
		defer cancel()
		select {
		case <-f.done:
		case <-ctx.Done():
			for _, it := range items {
				it.To.Receive(it.Tag, false, ctx.Err())
			}
			return
		}
		for i, it := range items {
			if f.err != nil {
				it.To.Receive(it.Tag, false, f.err)
				continue
			}
			if sc := n.scriptOf(it.Req.Op); sc != nil {
				sc.Cached.Store(true) // it ran, by EVAL
			}
			ok, err := answer(it.Req.Op, f.res[i])
			it.To.Receive(it.Tag, ok, err)
		}
	}()
}

// sendCombined runs a planned batch (batch.Combined): the SET NX PX of
// each acquisition, then one call of the batch script for every other
// request, by EVALSHA, or by EVAL when the node is not known to have the
// script. A NOSCRIPT answer means the script ran nothing: it goes again by
// EVAL, moved behind nothing, since it was the batch's last command.
func (n *Node) sendCombined(ctx context.Context, live []batch.Item) {
	s := &n.sender
	sc := n.scripts.Batch
	acq := s.combined.Acquisitions()
	keys, args := s.combined.Build(live, ChannelPrefix, s.ttl.Of)
	buf := s.buf[:0]
	for _, i := range acq {
		buf = n.command(buf, live[i].Req, false)
	}
	eval := !sc.Cached.Load()
	buf = appendScriptCall(buf, sc, eval, keys, args)
	s.buf = buf
	res, err := n.roundTrip(ctx, buf, len(acq)+1)
	if err != nil {
		for _, it := range live {
			it.To.Receive(it.Tag, false, err)
		}
		return
	}
	for j, i := range acq {
		ok, err := answer(adapter.OpAcquire, res[j])
		live[i].To.Receive(live[i].Tag, ok, err)
	}
	r := res[len(acq)]
	if r.kind == '-' && strings.HasPrefix(r.str, "NOSCRIPT") && !eval {
		sc.Cached.Store(false) // restarted, or SCRIPT FLUSH
		s.buf = appendScriptCall(s.buf[:0], sc, true, keys, args)
		if res, err = n.roundTrip(ctx, s.buf, 1); err == nil {
			r = res[0]
		}
	}
	if err == nil {
		sc.Cached.Store(true) // it ran, by EVAL or EVALSHA
		if err = r.err(); err == nil && r.kind != '$' {
			err = fmt.Errorf("goredis: unexpected reply %q to the batch script: want a string", r.kind)
		}
	}
	s.combined.Answer(live, r.str, err, func(msg string) error { return redisError(msg) })
}

// appendScriptCall appends the call of script sc on keys with args to buf,
// by EVALSHA, or by EVAL when eval is set.
func appendScriptCall(buf []byte, sc *batch.Script, eval bool, keys, args []string) []byte {
	verb, body := "EVALSHA", sc.SHA
	if eval {
		verb, body = "EVAL", sc.Src
	}
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(3+len(keys)+len(args)), 10)
	buf = append(buf, '\r', '\n')
	buf = appendBulk(buf, verb)
	buf = appendBulk(buf, body)
	buf = appendBulk(buf, strconv.Itoa(len(keys)))
	for _, k := range keys {
		buf = appendBulk(buf, k)
	}
	for _, a := range args {
		buf = appendBulk(buf, a)
	}
	return buf
}

// appendBulk appends a as one RESP bulk string.
func appendBulk(buf []byte, a string) []byte {
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(len(a)), 10)
	buf = append(buf, '\r', '\n')
	buf = append(buf, a...)
	return append(buf, '\r', '\n')
}

// reached waits until the node's connection is live, unless it is, and
// returns the items of live whose context is still live then, having
// answered the others with their context's error; or nil, having answered
// every item with the connection's error. A batch is built only once its
// connection is there, so that a request whose context ended while the
// connection was being made (a server that accepts connections and does
// not answer yet: a stopped process) is never written: its caller took
// that end for the request's, and may have dropped the release that
// undoes it (adapter.Node). The batch's writes (roundTrip) do not wait
// for another connection: one lost meanwhile fails the batch.
func (n *Node) reached(ctx context.Context, live []batch.Item) []batch.Item {
	if w, err := n.pipe.live(); w != nil || err != nil {
		return live // a write on a closed pipe fails it
	}
	if _, err := n.pipe.conn(ctx); err != nil {
		for _, it := range live {
			it.To.Receive(it.Tag, false, err)
		}
		return nil
	}
	live, _, _ = batch.Live(live)
	return live
}

// roundTrip writes buf (k commands) on the node's live connection
// (reached) and waits for their k replies (pipeTrip).
func (n *Node) roundTrip(ctx context.Context, buf []byte, k int) ([]reply, error) {
	return pipeTrip(ctx, n.pipe, buf, k)
}

// pipeTrip writes buf (k commands) on p's live connection (write) and
// waits for their k replies, or for ctx's end: then it returns ctx's
// error, and the replies, when they come, are read and dropped (conn.go),
// so the connection stays in step.
func pipeTrip(ctx context.Context, p *pipe, buf []byte, k int) ([]reply, error) {
	f, err := p.write(ctx, buf, k)
	if err != nil {
		return nil, err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if f.err != nil {
		return nil, f.err
	}
	return f.res, nil
}

// scriptOf returns the script that runs op, nil for an acquisition (SET).
func (n *Node) scriptOf(op adapter.Op) *batch.Script { return n.scripts.Of(op) }

// command appends req's command to buf: SET NX PX for an acquisition (R3),
// else its script by EVALSHA, or by EVAL when eval is set or the node is
// not known to have the script.
func (n *Node) command(buf []byte, req adapter.Request, eval bool) []byte {
	if req.Op == adapter.OpAcquire {
		return appendCommand(buf, "SET", req.Key, req.Value, "NX", "PX", n.sender.ttl.Of(req.TTL))
	}
	s := n.scriptOf(req.Op)
	if req.Op.IsMulti() {
		return multiCommand(buf, s, req, eval) // multi.go
	}
	verb, body := "EVALSHA", s.SHA
	if eval || !s.Cached.Load() {
		verb, body = "EVAL", s.Src
	}
	switch req.Op {
	case adapter.OpExtend:
		return appendCommand(buf, verb, body, "1", req.Key, req.Value, strconv.FormatInt(req.TTL.Milliseconds(), 10))
	case adapter.OpTransfer:
		return appendCommand(buf, verb, body, "1", req.Key, req.From, req.Value, strconv.FormatInt(req.TTL.Milliseconds(), 10))
	case adapter.OpReleaseAnnounce:
		return appendCommand(buf, verb, body, "1", req.Key, req.Value, ChannelPrefix) // R14
	}
	return appendCommand(buf, verb, body, "1", req.Key, req.Value)
}

// answer reads a reply as the blocking method of op returns it: SET NX
// answers OK or nil (held); the scripts answer 1 when they acted.
func answer(op adapter.Op, r reply) (bool, error) {
	if err := r.err(); err != nil {
		return false, err
	}
	if op == adapter.OpAcquire {
		switch {
		case r.null:
			return false, nil
		case r.kind == '+':
			return true, nil
		}
		return false, fmt.Errorf("goredis: unexpected reply %q to SET", r.kind)
	}
	if r.kind != ':' {
		return false, errors.New("goredis: unexpected reply to a script: want an integer")
	}
	return r.num == 1, nil
}

// Queued returns how many requests wait in the node's queue, not yet taken
// into a batch: a gauge of the node's backlog (0 for a Node that does not
// pipeline).
func (n *Node) Queued() int {
	if !n.batched() {
		return 0
	}
	return n.queue.Len()
}
