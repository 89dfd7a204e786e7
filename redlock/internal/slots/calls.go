package slots

import (
	"context"
	"sync"
	"time"

	"dlm/redlock/adapter"
)

// UndoTimeout bounds the release of the slots of a set that a refused
// acquisition had set on a cluster node.
const UndoTimeout = time.Second

// SplitCalls returns calls with every operation on a set whose keys span
// hash slots replaced by one call per slot, whose answers a Join makes
// the set's answer: for the batches of a cluster node, in which each
// call is one script on one slot. Calls on one slot are left as they are.
// start is how the node starts calls (its queue): a refused acquisition's
// releases go through it, so that they keep its order.
func SplitCalls(calls []adapter.Call, start func([]adapter.Call)) []adapter.Call {
	out := calls[:0:0]
	for _, c := range calls {
		if !c.Req.Op.IsMulti() {
			out = append(out, c)
			continue
		}
		groups := Split(c.Req.Keys)
		if len(groups) == 1 {
			out = append(out, c)
			continue
		}
		var undo func([]int, func())
		if c.Req.Op == adapter.OpAcquireAll {
			undo = func(gs []int, then func()) { undoCalls(groups, gs, c.Req, start, then) }
		}
		j := NewJoin(len(groups), undo, func(ok bool, err error) { c.To.Receive(c.Tag, ok, err) })
		for g, gr := range groups {
			req := c.Req
			req.Keys = Pick(c.Req.Keys, gr.Idx)
			out = append(out, adapter.Call{Ctx: c.Ctx, Req: req, To: j, Tag: g})
		}
	}
	return out
}

// undoCalls starts the releases, without announcement, of the slots gs of
// groups that the acquisition req set, and calls then once they are
// answered.
func undoCalls(groups []Group, gs []int, req adapter.Request, start func([]adapter.Call), then func()) {
	ctx, cancel := context.WithTimeout(context.Background(), UndoTimeout)
	var wg sync.WaitGroup
	wg.Add(len(gs))
	done := receiverFunc(func(int, bool, error) { wg.Done() })
	calls := make([]adapter.Call, len(gs))
	for i, g := range gs {
		calls[i] = adapter.Call{Ctx: ctx, To: done, Req: adapter.Request{Op: adapter.OpReleaseAll, Keys: Pick(req.Keys, groups[g].Idx), Value: req.Value}}
	}
	start(calls)
	go func() { wg.Wait(); cancel(); then() }()
}

// receiverFunc is a function as an adapter.Receiver.
type receiverFunc func(tag int, ok bool, err error)

func (f receiverFunc) Receive(tag int, ok bool, err error) { f(tag, ok, err) }

// Do starts req, split as SplitCalls splits it, by start, and waits for
// its answer or ctx's end.
func Do(ctx context.Context, req adapter.Request, start func([]adapter.Call)) (bool, error) {
	type answer struct {
		ok  bool
		err error
	}
	ch := make(chan answer, 1)
	start(SplitCalls([]adapter.Call{{Ctx: ctx, Req: req, Tag: 0,
		To: receiverFunc(func(_ int, ok bool, err error) { ch <- answer{ok, err} })}}, start))
	select {
	case a := <-ch:
		return a.ok, a.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
