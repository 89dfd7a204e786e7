package redlock

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// AsyncNode is an optional capability of a Node (found by type assertion,
// like io.Closer): operations that start without blocking and report their
// answer to a Receiver. When every node of a client has it, the client's
// fan-outs (R15) run without a goroutine per node, and the adapter is free to
// gather the requests of many concurrent lock operations into one round trip
// per node (redlock/rueidis does). Fenced acquisitions (FencingNode) still
// use the blocking methods.
type AsyncNode interface {
	Node
	// Start begins req on the node and returns without waiting for the
	// node. Requests started on one node must reach it in the order Start
	// was called: a release then never overtakes the acquisition it
	// undoes, which is why Unlock need not wait for the acquisitions still
	// in flight. It calls to.Receive(tag, ok, err) exactly once, from any
	// goroutine (possibly before Start returns), with what the blocking
	// method of req.Op would have returned. Start should answer by ctx's
	// deadline, and answer at once when ctx is already done; the client
	// bounds its own waits with the node timeout all the same (R8.2).
	Start(ctx context.Context, req Request, to Receiver, tag int)
}

// BatchNode is an optional capability of an AsyncNode: StartAll starts
// calls in order, like as many Start calls, and sends them to the node
// together. The hand-off uses it to send a release and the next waiter's
// acquisition in one round trip.
type BatchNode interface {
	AsyncNode
	// StartAll is Start for each of calls, in order, sent together.
	StartAll(calls []Call)
}

// Call is one Start: a request, its context, and where its answer goes.
type Call struct {
	Ctx context.Context
	Req Request
	To  Receiver
	Tag int
}

// Op names the operation of a Request.
type Op uint8

// The operations of an AsyncNode.
const (
	// OpAcquire is Node.Acquire (R3).
	OpAcquire Op = iota + 1
	// OpRelease is Node.Release (R5).
	OpRelease
	// OpReleaseAnnounce is HandoffNode.ReleaseAnnounce (R5, R14); a node
	// that is not a HandoffNode answers it as OpRelease.
	OpReleaseAnnounce
	// OpExtend is Node.Extend (R17).
	OpExtend
	// OpTransfer is TransferNode.Transfer: the key goes from Request.From
	// to Request.Value in one step (the local hand-over).
	OpTransfer
)

// String returns the operation's name.
func (op Op) String() string {
	switch op {
	case OpAcquire:
		return "acquire"
	case OpRelease:
		return "release"
	case OpReleaseAnnounce:
		return "release-announce"
	case OpExtend:
		return "extend"
	case OpTransfer:
		return "transfer"
	}
	return "Op(" + strconv.Itoa(int(op)) + ")"
}

// Request is one operation for an AsyncNode.
type Request struct {
	// Op is the operation.
	Op Op
	// Key is the lock key and Value the lock's random value (R4).
	Key, Value string
	// TTL is the expiry that OpAcquire, OpExtend and OpTransfer set.
	TTL time.Duration
	// From is the value that OpTransfer hands the key over from.
	From string
}

// TransferNode is an optional capability of an AsyncNode: a hand-over of
// the lock key from one value to another in one atomic step, which Start
// also runs as OpTransfer. When every node of a client has it, Unlock passes
// the lock to the client's next waiter for the resource without a round
// trip on the waiter's path (pass.go): the key never comes free on a node
// in between, so the waiter may hold the lock at once, within the validity
// it inherits.
type TransferNode interface {
	AsyncNode
	// Transfer sets key to value with an expiry of ttl if key holds from
	// or does not exist (R3), and leaves a key that holds any other value
	// alone. It reports whether key now holds value.
	Transfer(ctx context.Context, key, from, value string, ttl time.Duration) (bool, error)
}

// Receiver receives the answers of AsyncNode operations. Receive must not
// block: it runs on the adapter's goroutines.
type Receiver interface {
	// Receive reports the answer to the request started with tag: ok and
	// err as the blocking method returns them.
	Receive(tag int, ok bool, err error)
}

// asyncNodes returns nodes as AsyncNodes when every one of them is one, else
// nil: a client fans out asynchronously only when it can for every node.
func asyncNodes(nodes []Node) []AsyncNode {
	out := make([]AsyncNode, len(nodes))
	for i, n := range nodes {
		an, ok := n.(AsyncNode)
		if !ok {
			return nil
		}
		out[i] = an
	}
	return out
}

// fanRun is one fan-out over asynchronous nodes (Unlock's release, Extend).
// Its caller returns as soon as a quorum of nodes succeeded, or once every
// node answered; the requests still out run on, counted in c.bg.
type fanRun struct {
	c      *Client
	start  time.Time
	req    Request
	cancel context.CancelFunc // of the requests' context, at the last answer
	wake   sync.WaitGroup     // done when the caller may return

	mu       sync.Mutex
	out      []reply
	answered int
	oks      int
	woken    bool
	returned bool // the caller took a copy of out and returned
	buf      [7]reply
}

// Receive records node tag's answer.
func (f *fanRun) Receive(tag int, ok bool, err error) {
	c := f.c
	r := reply{i: tag, ok: ok && err == nil, err: err, latency: time.Since(f.start)}
	n := len(c.async)
	f.mu.Lock()
	if !f.returned {
		f.out[tag] = r
	}
	f.answered++
	if r.ok {
		f.oks++
	}
	wake := !f.woken && (f.answered == n || f.oks >= c.quorum)
	f.woken = f.woken || wake
	last := f.answered == n
	f.mu.Unlock()
	if last {
		f.cancel()
	}
	if wake {
		f.wake.Done()
	}
	c.bg.Done()
}

// fanoutAsync sends req to every node at once (R15) and returns each reply,
// in node order, as soon as a quorum of nodes succeeded or every node
// answered: a release or an extension confirmed by a quorum does not wait
// for the slowest nodes, whose requests go on in the background (Close waits
// for them). Those requests are not cancelled with ctx, but end at its
// deadline or the node timeout, whichever is first; the nodes that had not
// answered have NoReply.
//
// An announced release (OpReleaseAnnounce) hands the lock over to this
// client's next waiter for the key (hand-off, R14, handOver): the waiter's
// next attempt goes to each node right behind the release, in the same
// batch where the node is a BatchNode. Each node executes its requests in
// order (AsyncNode), so the SET NX finds the key released, and the hand-off
// costs one round trip instead of two. Such a release is not announced to
// other clients: the key is taken again in the same batch. When a release
// fails, the waiter's attempt fails too, and it waits again.
func (c *Client) fanoutAsync(ctx context.Context, req Request) []reply {
	n := len(c.async)
	if !c.bgAdd(n) {
		return c.closedReplies()
	}
	f := &fanRun{c: c, req: req}
	f.out = f.buf[:0]
	if n > len(f.buf) {
		f.out = make([]reply, 0, n)
	}
	f.out = f.out[:n]
	for i := range f.out {
		f.out[i] = reply{i: i, none: true}
	}
	deadline := time.Now().Add(c.opts.nodeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var nctx context.Context
	nctx, f.cancel = context.WithDeadline(context.WithoutCancel(ctx), deadline)
	f.wake.Add(1)
	f.start = time.Now()
	var pre *attemptRun
	if req.Op == OpReleaseAnnounce && c.hand != nil {
		pre = c.hand.handOver(req.Key, req.Value)
	}
	if pre != nil {
		// The lock goes to this client's waiter in the same batch:
		// announcing the release would only wake other clients' waiters
		// (and echo back to this client's own subscription) for attempts
		// bound to fail. The waiter's own release will announce.
		req.Op = OpRelease
	}
	for i, an := range c.async {
		if pre == nil {
			an.Start(nctx, req, f, i)
			continue
		}
		calls := [2]Call{{Ctx: nctx, Req: req, To: f, Tag: i}, pre.acquireCall(i)}
		if bn, ok := an.(BatchNode); ok {
			bn.StartAll(calls[:])
		} else {
			an.Start(calls[0].Ctx, calls[0].Req, calls[0].To, calls[0].Tag)
			an.Start(calls[1].Ctx, calls[1].Req, calls[1].To, calls[1].Tag)
		}
	}
	f.wake.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answered == n {
		return f.out // no answer is left to write it
	}
	f.returned = true
	return append([]reply(nil), f.out...)
}

// closedReplies is the answer of every node to a fan-out of a closed client.
func (c *Client) closedReplies() []reply {
	out := make([]reply, len(c.nodes))
	for i := range out {
		out[i] = reply{i: i, err: ErrClosed}
	}
	return out
}
