package rueidis

import (
	"context"

	"github.com/redis/rueidis"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
)

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
