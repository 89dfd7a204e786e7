package redlock

import (
	"context"
	"slices"
	"strings"

	"dlm/redlock/adapter"
)

// Several resources in one lock (LockAll). A set of resources is locked
// under one value, with one key per resource on every node, and every
// operation on the set is one atomic step per node (adapter.MultiNode): the
// acquisition sets every key of the set only if none exists, the extension
// extends them only if all still hold the value, the release deletes those
// that hold it. The engine carries these requests as it carries those of
// one key (one fan per operation, the same quorum, validity, late-answer
// releases and timeouts), so the argument for one resource holds for the
// set: see the package documentation.

// The operations of a fan on a set that only the blocking methods of
// adapter.MultiNode carry (fencing.go's opAcquireFenced and
// opRaiseFence for a set); they never go to AsyncNode.Start.
const (
	opAcquireAllFenced adapter.Op = 216 + iota // phase 1 of fencing a set (R18)
	opRaiseFences                              // phase 2 of fencing a set (R18)
)

// setShape is the shape of LockAll and TryLockAll on two or more
// resources (client.go: attempt): every key of the set at once, only if none is
// held (adapter.MultiNode), in its fenced form with WithFencing (R18).
type setShape struct{}

func (setShape) ask(c *Client, t target, value string, o lockOptions) (adapter.Request, nodeCall) {
	req := adapter.Request{Op: adapter.OpAcquireAll, Keys: t.keys, Value: value, TTL: o.ttl}
	by := c.fenced(t.resource, t.names)
	if by != nil {
		req.Op = opAcquireAllFenced
	}
	return req, by
}

// lockKeys returns the target's lock keys: its key, or a set's keys.
func (t target) lockKeys() []string {
	if t.keys != nil {
		return t.keys
	}
	return []string{t.key}
}

// setOp returns op's form for a set of keys (adapter.MultiNode) when keys is
// not nil, else op.
func setOp(op adapter.Op, keys []string) adapter.Op {
	if keys == nil {
		return op
	}
	switch op {
	case adapter.OpAcquire:
		return adapter.OpAcquireAll
	case adapter.OpRelease:
		return adapter.OpReleaseAll
	case adapter.OpReleaseAnnounce:
		return adapter.OpReleaseAllAnnounce
	case adapter.OpExtend:
		return adapter.OpExtendAll
	}
	return op
}

// doAll runs req, an operation on a set, on n by its blocking method.
func doAll(ctx context.Context, n adapter.MultiNode, req adapter.Request) (bool, error) {
	switch req.Op {
	case adapter.OpAcquireAll:
		return n.AcquireAll(ctx, req.Keys, req.Value, req.TTL)
	case adapter.OpReleaseAll, adapter.OpReleaseAllAnnounce:
		return n.ReleaseAll(ctx, req.Keys, req.Value, req.Op == adapter.OpReleaseAllAnnounce)
	case adapter.OpExtendAll:
		return n.ExtendAll(ctx, req.Keys, req.Value, req.TTL)
	}
	return false, invalidf("unknown node operation %v on a set", req.Op)
}

// acquireAll runs phase 1 of fencing a set on node i (R18), reading the
// node's floors where it has them (fl not nil), as fencing.go's acquire
// does.
func (fa *fenceAcquire) acquireAll(f *fan, i int, fl adapter.FenceFloorNode) (ok bool, fence uint64, kept bool, err error) {
	n, err := multiFencing(f.c, i)
	if err != nil {
		return false, 0, true, err
	}
	if fl != nil {
		return fl.AcquireAllFencedFloor(f.nctx, f.req.Keys, fa.keys, fa.floors, f.req.Value, f.req.TTL)
	}
	ok, fence, err = n.AcquireAllFenced(f.nctx, f.req.Keys, fa.keys, f.req.Value, f.req.TTL)
	return ok, fence, true, err
}

// raiseAll runs phase 2 of fencing a set on node i (R18), repairing the
// node's floors where it has them and a node of the quorum lost its own,
// as fencing.go's raiseOne does.
func (fr *fenceRaise) raiseAll(f *fan, i int) (bool, error) {
	n, err := multiFencing(f.c, i)
	if err != nil {
		return false, err
	}
	if fl, floored := f.c.nodes[i].(adapter.FenceFloorNode); floored && fr.repair {
		return fl.RaiseFencesRepair(f.nctx, f.req.Keys, fr.keys, fr.floors, f.req.Value, fr.token, f.c.opts.fenceRetention)
	}
	return n.RaiseFences(f.nctx, f.req.Keys, fr.keys, f.req.Value, fr.token, f.c.opts.fenceRetention)
}

// multiFencing returns node i of c as an adapter.MultiNode, for its
// fenced steps.
func multiFencing(c *Client, i int) (adapter.MultiNode, error) {
	n, ok := c.nodes[i].(adapter.MultiNode)
	if !ok { // LockAll checks every node first
		return nil, invalidf("node %q does not implement adapter.MultiNode", c.names[i])
	}
	return n, nil
}

// Resources returns the names of the locked resources: for a lock of
// LockAll or TryLockAll, the set, sorted; for one resource, that one. The
// slice is the caller's.
func (l *Lock) Resources() []string {
	if l.keys == nil {
		return []string{l.resource}
	}
	out := make([]string, len(l.keys))
	for i, k := range l.keys {
		out[i] = l.client.opts.resourceOf(l.client.opts.prefix, k)
	}
	return out
}

// LockAll acquires every resource of resources as one lock, all or nothing
// (see the package documentation for the guarantee): each attempt sets
// every resource's key on each node in one atomic step, only if none of
// them is held there, so that two clients locking overlapping sets never
// both win, and neither holds part of a set while it waits for the rest
// (no deadlock, whatever order the callers list the resources in). It
// retries as Lock does (R10) until it succeeds, ctx ends, or the tries run
// out; the error is Lock's.
//
// The resources are sorted; an empty list, an empty name or a name listed
// twice is an error wrapping ErrInvalid. A set excludes, and is excluded
// by, every lock of any client on any of its resources, Lock's included.
// The lock has the same validity, extension (Extend, WithAutoExtend),
// release (Unlock) and fencing (one Token for the set, above the token of
// every earlier grant of any of its resources, whatever its kind, across
// restarts without persistence and failovers by hand too: the set reads
// and repairs the nodes' fence floor as Lock does) as a lock on one
// resource.
// A set waiting to retry is woken by the announced release of any of its
// resources (WithHandoff), but Unlock hands over only locks on one
// resource: a set is released, then its waiters are woken. LockAll of one
// resource is Lock.
//
// Every node must implement adapter.MultiNode, as redlock/goredis,
// redlock/rueidis and redlocktest.MemNode do; otherwise LockAll returns an
// error wrapping ErrInvalid that names the node, contacting none.
func (c *Client) LockAll(ctx context.Context, resources []string, opts ...LockOption) (*Lock, error) {
	t, o, err := c.settingsAll(resources, opts)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, t, o)
}

// DoAll is Do for a set of resources locked as one (LockAll): it acquires
// every resource of resources, keeps them with WithAutoExtend, runs fn with
// a context cancelled the moment the lock is lost, then releases them. Its
// errors are Do's, and LockAll's for the acquisition.
func (c *Client) DoAll(ctx context.Context, resources []string, fn func(ctx context.Context) error, opts ...LockOption) error {
	if fn == nil {
		return invalidf("DoAll: nil function")
	}
	l, err := c.LockAll(ctx, resources, append(slices.Clone(opts), WithAutoExtend())...)
	if err != nil {
		return err
	}
	return l.doFn(ctx, fn) // life.go
}

// TryLockAll makes exactly one attempt to acquire every resource of
// resources as one lock (see LockAll). On failure the error satisfies
// errors.Is(err, ErrNotAcquired) and errors.As gives an *AcquireError,
// whose Resource is the set's names joined by ",", and no key of the set
// is left on any node.
func (c *Client) TryLockAll(ctx context.Context, resources []string, opts ...LockOption) (*Lock, error) {
	t, o, err := c.settingsAll(resources, opts)
	if err != nil {
		return nil, err
	}
	o.tries = 1
	return c.acquire(ctx, t, o)
}

// settingsAll validates resources and the options of LockAll, and returns
// the target: one resource when there is one, else the sorted set.
func (c *Client) settingsAll(resources []string, opts []LockOption) (target, lockOptions, error) {
	names, err := setNames(resources)
	if err != nil {
		return target{}, lockOptions{}, err
	}
	if len(names) == 1 {
		o, err := c.settings(names[0], opts)
		return c.one(names[0]), o, err
	}
	if err := c.checkMulti(); err != nil {
		return target{}, lockOptions{}, err
	}
	t := c.set(names)
	o, err := c.settings(t.resource, opts)
	return t, o, err
}

// set is the target of a set of two or more names, sorted and distinct
// (setNames).
func (c *Client) set(names []string) target {
	t := target{resource: strings.Join(names, ","), names: names, keys: make([]string, len(names)), shape: setShape{}}
	for i, name := range names {
		t.keys[i] = c.opts.keyOf(c.opts.prefix, name)
	}
	return t
}

// setNames returns a sorted copy of resources, or an error wrapping
// ErrInvalid for an empty list, an empty name or a duplicate.
func setNames(resources []string) ([]string, error) {
	if len(resources) == 0 {
		return nil, invalidf("no resources: LockAll needs at least one resource name")
	}
	names := slices.Clone(resources)
	for i, name := range names {
		if name == "" {
			return nil, invalidf("resource %d of %d is an empty name: every resource of a set needs a name", i+1, len(names))
		}
	}
	slices.Sort(names)
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			return nil, invalidf("resource %q is listed twice: the resources of a set must be distinct", names[i])
		}
	}
	return names, nil
}

// checkMulti refuses a client whose nodes cannot lock a set.
func (c *Client) checkMulti() error {
	for i, n := range c.nodes {
		if _, ok := n.(adapter.MultiNode); !ok {
			return invalidf("node %q (position %d) does not implement adapter.MultiNode, which LockAll needs for a set: use an adapter that has it, such as redlock/goredis or redlock/rueidis", c.names[i], i)
		}
	}
	return nil
}
