package adapter

import (
	"context"
	"io"
	"strconv"
	"time"
)

// Node is one independent Redis master, seen at Redlock's level of meaning
// (R3, R5, R17). A Node must be safe for concurrent use. Every method must
// return promptly once ctx is done: the client bounds each call with its node
// timeout (R8.2). A request whose context ended before it was written to
// the node (waiting for a connection being made, say, to a server that
// accepts connections and does not answer yet) must never be written
// afterwards: the client took its end for the request's, and may have
// sent what undoes it already, or dropped that too (its context ended as
// well); a write after them would leave a key the client believes gone.
// A request written before its context ended may still run on the node
// later (a server stopped after the write); the requests after it on the
// same node run after it.
type Node interface {
	// Acquire sets key to value with an expiry of ttl only if key does not
	// exist (R3: SET key value NX PX ttl). It reports whether the key was set;
	// false with a nil error means the key is held (by another value).
	Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// Release deletes key only if it holds value, atomically (R5). It reports
	// whether a key was deleted.
	Release(ctx context.Context, key, value string) (bool, error)
	// Extend resets the expiry of key to ttl only if key holds value,
	// atomically (R17). It never creates a key. It reports whether the
	// expiry was reset.
	Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
}

// SharedNode is an optional capability of a Node: one Node value may serve
// several clients at once (a client WithFencing for an election beside a
// plain one: fencing is a client option), and it closes when the last of
// them closes. redlock.New calls Share once for the client it returns;
// Client.Close calls Close (io.Closer), which then only gives that client's
// share back while another client shares the node, and closes it at the
// last share. Close on a node that no client shares closes it at once.
type SharedNode interface {
	Node
	io.Closer
	// Share counts one more client using the node.
	Share()
}

// SetupNode is an optional capability of a Node: it can give up at once
// the connections it is still making (a dial, a handshake). Client.Close
// calls AbortSetup before it waits for its requests still on the wire: a
// node that hangs before it ever answered (a stopped process accepts
// connections and never answers) would otherwise hold Close up to those
// requests' deadlines, a grant's patience for a node the client has no
// history of. The requests waiting for such a connection fail, and so do
// those that would make a new one; the connections made serve on. A node
// shared by several clients (SharedNode) gives up only at its last
// client's Close.
type SetupNode interface {
	Node
	AbortSetup()
}

// FencingNode is an optional capability of a Node: the two atomic steps of
// fencing tokens kept as a quorum max-register (R18). A client built with
// redlock.WithFencing refuses nodes that lack it. Each method must be one
// atomic step on the node (one Lua script on Redis).
//
// A fence value is a decimal uint64 stored under fenceKey, separate from the
// lock key: it survives the lock key's expiry and release. A missing fence
// key reads as 0.
type FencingNode interface {
	Node
	// AcquireFenced is Acquire (R3) that, in the same atomic step and only
	// when it set the key, also reads the fence value stored under fenceKey.
	// It reports whether the key was set and, if so, the fence value (0 when
	// there is none).
	AcquireFenced(ctx context.Context, key, fenceKey, value string, ttl time.Duration) (ok bool, fence uint64, err error)
	// RaiseFence sets the fence value under fenceKey to token, with an
	// expiry of retention (0: none), only if key still holds value and the
	// fence is below token (a missing fence counts as 0), atomically. It
	// reports whether it set the fence. It never lowers a fence.
	RaiseFence(ctx context.Context, key, fenceKey, value string, token uint64, retention time.Duration) (bool, error)
}

// HandoffNode is an optional capability of a Node: releases that announce
// themselves, so that waiters retry at once instead of sleeping out their
// random delay (R10, R14). The client releases with ReleaseAnnounce on
// every node, and a waiting Lock subscribes to the resource's releases on
// some of the nodes (redlock.HandoffWatchNodes of them), through one
// subscription per node (WatchReleases) shared by every resource the client
// waits for.
type HandoffNode interface {
	Node
	// ReleaseAnnounce is Release (R5) that, when it deletes key, also
	// announces the release of key, with the value released, to every
	// subscriber of key on this node, in the same atomic step. It reports
	// whether a key was deleted.
	ReleaseAnnounce(ctx context.Context, key, value string) (bool, error)
	// WatchReleases opens one subscription on the node, multiplexed across
	// keys: after Watch(key), every announced release of key calls
	// notify(key, value). notify does not block. The subscription may be
	// opened lazily, on the first Watch.
	WatchReleases(notify func(key, value string)) (ReleaseWatch, error)
}

// ReleaseWatch is one subscription to release announcements on one node,
// multiplexed across keys (see HandoffNode). Its methods are safe for
// concurrent use. Announcements are hints: one may be lost (a connection
// that drops, a subscription that arrives late), and the waiter's timed
// random retry (R10) covers that.
type ReleaseWatch interface {
	// Watch starts delivering the releases of key.
	Watch(ctx context.Context, key string) error
	// Unwatch stops delivering the releases of key.
	Unwatch(ctx context.Context, key string) error
	// Close ends the subscription.
	Close() error
}

// AsyncNode is an optional capability of a Node: operations that start
// without blocking and report their answer to a Receiver. When every node of
// a client has it, the client's fan-outs (R15) run without a goroutine per
// node, and the adapter is free to gather the requests of many concurrent
// lock operations into one round trip per node (redlock/rueidis does).
// Fenced acquisitions (FencingNode) use the blocking methods.
type AsyncNode interface {
	Node
	// Start begins req on the node and returns without waiting for the
	// node. Requests started on one node must be executed by it in the
	// order Start was called: a release then never overtakes the
	// acquisition it undoes. Start calls to.Receive(tag, ok, err) exactly
	// once, from any goroutine (possibly before Start returns), with what
	// the blocking method of req.Op would have returned. Start should
	// answer by ctx's deadline, and at once when ctx is already done; the
	// client bounds its own waits with the node timeout all the same.
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

// TransferNode is an optional capability of an AsyncNode: a hand-over of
// the lock key from one value to another in one atomic step, which Start
// also runs as OpTransfer. When every node of a client has it, an Unlock
// with a waiter of the same client for the resource hands the key over
// instead of releasing it, so that the key is never free on a node in
// between.
type TransferNode interface {
	AsyncNode
	// Transfer sets key to value with an expiry of ttl if key holds from,
	// and leaves a key that holds any other value, or none, alone: a
	// holder hands over only what it still holds. It reports whether key
	// now holds value.
	Transfer(ctx context.Context, key, from, value string, ttl time.Duration) (bool, error)
}

// Call is one Start: a request, its context, and where its answer goes.
type Call struct {
	// Ctx bounds the request (Start's ctx).
	Ctx context.Context
	// Req is the request.
	Req Request
	// To receives the answer, with Tag.
	To Receiver
	// Tag is passed back to To.Receive.
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
	if s := op.multiString(); s != "" {
		return s
	}
	if name, ok := rwName(op); ok {
		return name
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
	// Keys are the lock keys of a set, for the operations of a MultiNode
	// (Op.IsMulti: OpAcquireAll, ...), distinct and sorted; Key is then
	// empty.
	Keys []string
	// Waiter identifies a waiting writer (OpWAcquire, OpWUnwait: RWNode);
	// empty for every other operation.
	Waiter string
}

// Receiver receives the answers of AsyncNode operations. Receive must not
// block: it runs on the adapter's goroutines.
type Receiver interface {
	// Receive reports the answer to the request started with tag: ok and
	// err as the blocking method returns them.
	Receive(tag int, ok bool, err error)
}
