package rueidis

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
)

// The batches (redlock/internal/batch): every Acquire, Release,
// ReleaseAnnounce, Extend and Transfer of a Node, blocking or started with
// Start (adapter.AsyncNode), joins the node's queue, and one worker at a
// time sends the whole queue in one DoMulti (R15), in queue order. The
// scripts that do not batch join the same queue (scriptCall, at the end of
// this file).

// sender is the state of a node's batch worker: its buffers and deadline,
// reused from batch to batch (one worker runs at a time).
type sender struct {
	cmds     []rueidis.Completed
	retries  []int
	one      [1]rueidis.RedisResult
	dctx     *batch.DeadlineCtx
	tails    batch.Tails
	combined batch.Combined
	// combine is set when a batch may go as one call of the batch script
	// (batch.Combined): not over a cluster client, whose batch's keys
	// may lie in different slots.
	combine bool
	ttl     batch.TTLArg
	// client is the batch's client (Node.conn): every command of a batch
	// is built by the client that sends it.
	client rueidis.Client
}

// ttlArg returns ttl in milliseconds as a command's argument, formatted
// once per distinct ttl (batch.TTLArg).
func (b *sender) ttlArg(ttl time.Duration) string { return b.ttl.Of(ttl) }

var _ adapter.BatchNode = (*Node)(nil)

// Start queues req and returns (adapter.AsyncNode). The answer goes to
// to.Receive(tag, ...) once the node answered, the request failed, or ctx
// was already done when its batch left.
func (n *Node) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	if n.cluster && req.Op.IsMulti() {
		n.queue.StartAll(n.split([]adapter.Call{{Ctx: ctx, Req: req, To: to, Tag: tag}})) // cluster.go
		return
	}
	n.queue.Start(ctx, req, to, tag)
}

// StartAll queues calls, in order, so that they leave in the same batch
// (adapter.BatchNode): the hand-off sends a release and the next waiter's
// acquisition together.
func (n *Node) StartAll(calls []adapter.Call) {
	if n.cluster {
		calls = n.split(calls) // cluster.go
	}
	n.queue.StartAll(calls)
}

// send runs one batch: one DoMulti of every request whose context is still
// live, bounded by the latest of their deadlines (so that one caller's short
// deadline does not fail the others), then EVAL for the scripts the node did
// not have (NOSCRIPT: a restart, SCRIPT FLUSH). Only a script that is the
// last request of the batch on its key goes by EVALSHA (batch.Tails), so the
// retry after the batch moves it behind other keys' requests only: every
// request runs in Start order for its key, whatever the node's script cache
// holds.
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
				// The deadline passed: rueidis may still hold this batch's
				// commands, so neither the context nor the command
				// buffer is reused.
				b.dctx, b.cmds = nil, nil
			}
		}()
	}
	if !n.cluster {
		if live = n.reached(ctx, live); len(live) == 0 {
			return
		}
	}
	c := n.conn(ctx)
	b.client = c
	if b.combine && b.combined.Plan(live) {
		n.sendCombined(ctx, live)
		return
	}
	cmds := b.cmds[:0]
	tail := b.tails.Mark(live)
	for i, it := range live {
		if sc := callOf(it); sc != nil {
			cmds = append(cmds, sc.command(c, !tail[i])) // scriptCall, below
			continue
		}
		cmds = append(cmds, n.command(it.Req, !tail[i]))
	}
	b.cmds = cmds
	var res []rueidis.RedisResult
	if n.cluster {
		res = n.doCluster(ctx, c, live, cmds) // cluster.go
	} else if len(cmds) == 1 {
		// A lone request: Do allocates less than DoMulti for one command.
		b.one[0] = c.Do(ctx, cmds[0])
		res = b.one[:]
	} else {
		res = c.DoMulti(ctx, cmds...)
	}
	for i := range res {
		if res[i].NonRedisError() != nil {
			// The connection failed (or the deadline passed) under the
			// batch: rueidis answered it at once, but its writer may still
			// be writing these commands, so the buffer is not reused.
			b.cmds = nil
			break
		}
	}
	if n.cluster {
		n.reroute(ctx, c, live, res) // cluster.go
	}
	retries := b.retries[:0]
	for i, it := range live {
		if s := n.itemScript(it); s != nil {
			if rerr, ok := rueidis.IsRedisErr(res[i].Error()); ok && rerr.IsNoScript() {
				s.Cached.Store(false) // restarted, or SCRIPT FLUSH
				retries = append(retries, i)
				continue
			}
			if res[i].NonRedisError() == nil {
				s.Cached.Store(true) // it ran, by EVAL or EVALSHA
			}
		}
		deliver(it, res[i])
	}
	b.retries = retries[:0]
	if len(retries) == 0 {
		return
	}
	cmds = make([]rueidis.Completed, 0, len(retries))
	for _, i := range retries {
		if sc := callOf(live[i]); sc != nil {
			cmds = append(cmds, sc.command(c, true))
			continue
		}
		cmds = append(cmds, n.command(live[i].Req, true))
	}
	if n.cluster {
		again := make([]batch.Item, len(retries))
		for j, i := range retries {
			again[j] = live[i]
		}
		res = n.doCluster(ctx, c, again, cmds) // cluster.go
	} else {
		res = c.DoMulti(ctx, cmds...)
	}
	for j, i := range retries {
		if res[j].NonRedisError() == nil {
			n.itemScript(live[i]).Cached.Store(true)
		}
		deliver(live[i], res[j])
	}
}

// reached waits until the node has an established connection, unless it
// has one, and returns the items of live whose context is still live
// then, having answered the others with their context's error; or nil,
// having answered every item with the error of the wait. A batch goes to
// rueidis only once the connection is there: rueidis writes the commands
// that waited for a connection being made as soon as it is made, whatever
// their own contexts, under the batch's context, the latest of theirs; a
// request whose context ended meanwhile (a server that accepts
// connections and does not answer yet: a stopped process) would be
// written after its caller took that end for the request's and maybe
// dropped the release that undoes it (adapter.Node). The wait ends when a
// handshake is answered (awaitConnection), not with an answer of its own,
// so a batch that found no connection is still answered after two round
// trips. A connection lost between the handshake and the batch's write is
// made again by rueidis under the batch's context: that window stays
// open. A cluster node waits for each master (reachedMaster, cluster.go).
func (n *Node) reached(ctx context.Context, live []batch.Item) []batch.Item {
	if n.setups.connected() {
		return live
	}
	if err := n.awaitConnection(ctx, n.conn(ctx)); err != nil {
		// Those whose context ended get its error; the rest the wait's.
		live, _, _ = batch.Live(live)
		for _, it := range live {
			deliver(it, rueidis.NewErrorResult(err))
		}
		return nil
	}
	live, _, _ = batch.Live(live)
	return live
}

// awaitConnection sends a PING over c, which joins the set-up of c's
// connection under way or starts one, and waits until the node has an
// established connection (setups.changed: a handshake answered), or
// until the PING's answer comes, or ctx ends. It returns nil, or the
// error that ended the wait (the set-up failed, or ctx ended).
func (n *Node) awaitConnection(ctx context.Context, c rueidis.Client) error {
	ping := make(chan error, 1)
	// The PING's own context: a batch's is reused by the next batch.
	pctx, cancel := context.Background(), context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		pctx, cancel = context.WithDeadline(pctx, d)
	}
	go func() {
		defer cancel()
		ping <- c.Do(pctx, c.B().Ping().Build()).NonRedisError()
	}()
	for {
		changed := n.setups.changed()
		if n.setups.connected() {
			return nil
		}
		select {
		case <-changed:
		case err := <-ping:
			return err // nil: answered, so connected
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// itemScript returns the script an item runs: its own for a script call
// (scriptCall), else its operation's; nil for an acquisition (SET).
func (n *Node) itemScript(it batch.Item) *batch.Script {
	if sc := callOf(it); sc != nil {
		return sc.s
	}
	return n.scriptOf(it.Req.Op)
}

// deliver answers an item with its result r: a script call gets r itself.
func deliver(it batch.Item, r rueidis.RedisResult) {
	if sc := callOf(it); sc != nil {
		sc.res = r // read once Receive closed sc.done
		it.To.Receive(it.Tag, false, nil)
		return
	}
	ok, err := answer(it.Req.Op, r)
	it.To.Receive(it.Tag, ok, err)
}

// sendCombined runs a planned batch (batch.Combined): the SET NX PX of
// each acquisition, then one call of the batch script for every other
// request, by EVALSHA, or by EVAL when the node is not known to have the
// script. A NOSCRIPT answer means the script ran nothing: it goes again by
// EVAL, moved behind nothing, since it was the batch's last command.
func (n *Node) sendCombined(ctx context.Context, live []batch.Item) {
	b := &n.sender
	c := b.client
	sc := n.scripts.Batch
	acq := b.combined.Acquisitions()
	keys, args := b.combined.Build(live, ChannelPrefix, b.ttlArg)
	script := func(eval bool) rueidis.Completed {
		// Not over a cluster client (combine): the keys go as arguments,
		// which spares the builder a CRC16 (a client of one node routes
		// nothing by slot).
		verb, body := "EVALSHA", sc.SHA
		if eval {
			verb, body = "EVAL", sc.Src
		}
		return c.B().Arbitrary(verb).Args(body, strconv.Itoa(len(keys))).Args(keys...).Args(args...).Build()
	}
	cmds := b.cmds[:0]
	for _, i := range acq {
		cmds = append(cmds, n.command(live[i].Req, false))
	}
	eval := !sc.Cached.Load()
	cmds = append(cmds, script(eval))
	b.cmds = cmds
	res := c.DoMulti(ctx, cmds...)
	for i := range res {
		if res[i].NonRedisError() != nil {
			b.cmds = nil // as in send: rueidis' writer may still hold them
			break
		}
	}
	for j, i := range acq {
		ok, err := answer(adapter.OpAcquire, res[j])
		live[i].To.Receive(live[i].Tag, ok, err)
	}
	r := res[len(acq)]
	if rerr, ok := rueidis.IsRedisErr(r.Error()); ok && rerr.IsNoScript() && !eval {
		sc.Cached.Store(false) // restarted, or SCRIPT FLUSH
		r = c.Do(ctx, script(true))
	}
	if r.NonRedisError() == nil {
		sc.Cached.Store(true) // it ran, by EVAL or EVALSHA
	}
	reply, err := r.ToString()
	b.combined.Answer(live, reply, err, func(msg string) error { return errors.New(msg) })
}

// scriptOf returns the script that runs op, nil for an acquisition (SET).
func (n *Node) scriptOf(op adapter.Op) *batch.Script { return n.scripts.Of(op) }

// command builds req's command: SET NX PX for an acquisition (R3), else its
// script by EVALSHA, or by EVAL when eval is set or the node is not known
// to have the script. Only the batch worker calls it (it uses n.sender).
func (n *Node) command(req adapter.Request, eval bool) rueidis.Completed {
	c := n.sender.client
	s := n.scriptOf(req.Op)
	if req.Op.IsMulti() {
		return n.multiCommand(s, req, eval) // multi.go
	}
	arg2 := ""
	switch req.Op {
	case adapter.OpAcquire:
		// The typed builder formats the ttl for every command.
		if n.sender.combine {
			// A client of one node routes nothing by slot: the key goes
			// as an argument, which spares the builder its CRC16.
			return c.B().Arbitrary("SET").Args(req.Key, req.Value, "NX", "PX", n.sender.ttlArg(req.TTL)).Build()
		}
		return c.B().Arbitrary("SET").Keys(req.Key).Args(req.Value, "NX", "PX", n.sender.ttlArg(req.TTL)).Build()
	case adapter.OpExtend:
		arg2 = n.sender.ttlArg(req.TTL)
	case adapter.OpReleaseAnnounce:
		arg2 = ChannelPrefix
	case adapter.OpTransfer:
		ttl := n.sender.ttlArg(req.TTL)
		if eval || !s.Cached.Load() {
			return c.B().Eval().Script(s.Src).Numkeys(1).Key(req.Key).Arg(req.From, req.Value, ttl).Build()
		}
		return c.B().Evalsha().Sha1(s.SHA).Numkeys(1).Key(req.Key).Arg(req.From, req.Value, ttl).Build()
	}
	eval = eval || !s.Cached.Load()
	switch {
	case eval && arg2 == "":
		return c.B().Eval().Script(s.Src).Numkeys(1).Key(req.Key).Arg(req.Value).Build()
	case eval:
		return c.B().Eval().Script(s.Src).Numkeys(1).Key(req.Key).Arg(req.Value, arg2).Build()
	case arg2 == "":
		return c.B().Evalsha().Sha1(s.SHA).Numkeys(1).Key(req.Key).Arg(req.Value).Build()
	}
	return c.B().Evalsha().Sha1(s.SHA).Numkeys(1).Key(req.Key).Arg(req.Value, arg2).Build()
}

// answer reads a reply as the blocking method of op returns it: SET NX
// answers OK or nil (held); the scripts answer 1 when they acted.
func answer(op adapter.Op, r rueidis.RedisResult) (bool, error) {
	err := r.Error()
	if op == adapter.OpAcquire {
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

// do queues req and waits for its answer, or for ctx to end.
func (n *Node) do(ctx context.Context, req adapter.Request) (bool, error) {
	if n.cluster && req.Op.IsMulti() {
		return n.doSplit(ctx, req) // cluster.go
	}
	return n.queue.Do(ctx, req)
}

// Queued returns how many requests wait in the node's queue, not yet taken
// into a batch: a gauge of the node's backlog.
func (n *Node) Queued() int { return n.queue.Len() }

// The scripts that do not batch (fenced acquisitions and fence raises,
// read-write locks, records) go through the node's queue too, behind every
// request started before them, so that everything a lock does on a node
// runs there in the order it was made. Before, they went to rueidis
// directly: one started while a release still waited in the queue (behind
// a batch the node had not answered) reached the node first, and a release
// of one attempt could run after the next attempt's fenced acquisition of
// the same value (WithValue, campaigns) and delete the key it counted.

// opScript is the node's own operation in its queue: one script run by
// evalKeys. The request's To is the *scriptCall that carries it.
const opScript adapter.Op = 240

// scriptCall is one script run through the node's queue, and its result.
// It receives its own answer (adapter.Receiver).
type scriptCall struct {
	s          *batch.Script
	keys, args []string
	res        rueidis.RedisResult
	err        error
	done       chan struct{}
}

// Receive ends the call; its result, when there is one, is in res.
func (c *scriptCall) Receive(_ int, _ bool, err error) {
	c.err = err
	close(c.done)
}

// command builds the call's command, by EVAL when eval is set or the node
// is not known to have the script, else by EVALSHA.
func (c *scriptCall) command(cl rueidis.Client, eval bool) rueidis.Completed {
	n := int64(len(c.keys))
	if eval || !c.s.Cached.Load() {
		return cl.B().Eval().Script(c.s.Src).Numkeys(n).Key(c.keys...).Arg(c.args...).Build()
	}
	return cl.B().Evalsha().Sha1(c.s.SHA).Numkeys(n).Key(c.keys...).Arg(c.args...).Build()
}

// callOf returns the script call an item carries, or nil.
func callOf(it batch.Item) *scriptCall {
	if it.Req.Op != opScript {
		return nil
	}
	c, _ := it.To.(*scriptCall)
	return c
}

// evalKeys runs s over keys and args through the node's queue (EVALSHA,
// or EVAL when the node answers NOSCRIPT, as for the batched scripts) and
// returns its result, or ctx's error when ctx ends first.
func (n *Node) evalKeys(ctx context.Context, s *batch.Script, keys []string, args ...string) rueidis.RedisResult {
	if n.cluster {
		if err := oneSlot(keys); err != nil { // cluster.go
			return rueidis.NewErrorResult(err)
		}
	}
	c := &scriptCall{s: s, keys: keys, args: args, done: make(chan struct{})}
	req := adapter.Request{Op: opScript}
	if len(keys) > 0 {
		req.Key, req.Keys = keys[0], keys[1:] // for batch.Tails
	}
	n.queue.Start(ctx, req, c, 0)
	select {
	case <-c.done:
	case <-ctx.Done():
		return rueidis.NewErrorResult(ctx.Err())
	}
	if c.err != nil {
		return rueidis.NewErrorResult(c.err)
	}
	return c.res
}
