package redlocktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// stoppedBackend makes a node over a store that is stopped (it accepts
// connections and answers nothing) before the node's first request, and
// returns the node, how to resume the store, and how to read it.
type stoppedBackend func(t *testing.T) (n adapter.Node, resume func(), in Inspector)

// runNeverWrittenLate checks, on a node whose server stopped before the
// node's first request (a stopped process), that a request whose context
// ended while the node waited (for its connection, for a cluster's slot
// map) is never written once the server resumes (adapter.Node). Request
// a, with a short context, and request b, with a long one, start together
// (one batch where the node is a BatchNode, else in order by Start); once
// a's context ended the server resumes: b is answered, and a set nothing.
// A write of a after its end could land after the release its caller
// sent then, and leave a key that caller believes gone until its ttl.
// Each subtest has a store and a node of its own, made by stopped.
func runNeverWrittenLate(t *testing.T, stopped stoppedBackend) {
	const ttl = time.Minute
	for _, batched := range []bool{true, false} {
		name := "Start"
		if batched {
			name = "StartAll"
		}
		t.Run(name, func(t *testing.T) {
			n, resume, in := stopped(t)
			an, ok := n.(adapter.AsyncNode)
			bn, isBatch := n.(adapter.BatchNode)
			if !ok || (batched && !isBatch) {
				t.Skipf("%T is not an adapter.AsyncNode with StartAll: the order of its requests cannot be set", n)
			}
			actx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
			defer cancel()
			bctx := t.Context()
			got := newAnswers()
			const a, b = 0, 1 // tags
			calls := []adapter.Call{
				{Ctx: actx, Req: adapter.Request{Op: adapter.OpAcquire, Key: "unsent:a", Value: "va", TTL: ttl}, To: got, Tag: a},
				{Ctx: bctx, Req: adapter.Request{Op: adapter.OpAcquire, Key: "unsent:b", Value: "vb", TTL: ttl}, To: got, Tag: b},
			}
			if batched {
				bn.StartAll(calls)
			} else {
				for _, c := range calls {
					an.Start(c.Ctx, c.Req, c.To, c.Tag)
				}
			}
			<-actx.Done()
			resume()
			if r := got.wait(t, b, time.Minute); !r.ok || r.err != nil {
				t.Fatalf("b (context live) = %v, %v once the server resumed: want true, nil", r.ok, r.err)
			}
			if r := got.wait(t, a, time.Minute); r.ok || !errors.Is(r.err, context.DeadlineExceeded) {
				t.Errorf("a (context ended before the server resumed) = %v, %v: want false and its context's error", r.ok, r.err)
			}
			// a was ahead of b on the node: written, it would have run
			// before b did.
			if _, held, err := in.Value(t.Context(), "unsent:a"); err != nil || held {
				t.Errorf("a's key is on the server (held %v, err %v) after a's context ended before the server resumed: a was written after its end", held, err)
			}
		})
	}
}
