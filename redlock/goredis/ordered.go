package goredis

import (
	"context"
	"sync"

	"dlm/redlock/adapter"
)

// keyOrder keeps the requests that a Node which does not pipeline runs on
// goroutines of their own (Start) in the order Start was called, key by
// key, as adapter.AsyncNode requires: a request waits until every earlier
// request on one of its keys has been answered, so that a release never
// overtakes the acquisition it undoes. Requests on other keys go on at
// once. The zero value is ready.
type keyOrder struct {
	mu    sync.Mutex
	tails map[string]chan struct{} // closed once the latest request on the key is answered
}

// start registers a request on keys and returns the channels of the
// earlier requests it must wait for, and done, which ends it.
func (o *keyOrder) start(keys []string) (prev []chan struct{}, done func()) {
	ch := make(chan struct{})
	o.mu.Lock()
	if o.tails == nil {
		o.tails = map[string]chan struct{}{}
	}
	for _, k := range keys {
		if p, ok := o.tails[k]; ok {
			prev = append(prev, p)
		}
		o.tails[k] = ch
	}
	o.mu.Unlock()
	return prev, func() {
		close(ch)
		o.mu.Lock()
		for _, k := range keys {
			if o.tails[k] == ch {
				delete(o.tails, k)
			}
		}
		o.mu.Unlock()
	}
}

// run runs req by run on a goroutine of its own, after every earlier
// request on its keys, and sends the answer to to. A request whose ctx
// ends while it waits is answered with ctx's error, unrun.
func (o *keyOrder) run(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int, run func(context.Context, adapter.Request) (bool, error)) {
	keys := req.Keys
	if len(keys) == 0 {
		keys = []string{req.Key}
	}
	prev, done := o.start(keys)
	go func() {
		defer done()
		for _, p := range prev {
			select {
			case <-p:
			case <-ctx.Done():
				to.Receive(tag, false, ctx.Err())
				return
			}
		}
		ok, err := run(ctx, req)
		to.Receive(tag, ok, err)
	}()
}
