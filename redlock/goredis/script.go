package goredis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
)

// The scripts that do not batch (fenced acquisitions and fence raises,
// read-write locks, records) go through the node's queue too, on its one
// connection, behind every request started before them: one ordered way
// to the node for everything a lock does there. Before, they went through
// the go-redis pool while releases went over the node's own connection,
// and a release of one attempt could run on the node after the next
// attempt's fenced acquisition of the same value (WithValue, campaigns)
// and delete the key that attempt counted.

// The node's own operations in its queue: a script by EVAL or by EVALSHA,
// run for a go-redis Script (scripter). The request's To is the
// *scriptCall that carries it.
const (
	opEval adapter.Op = 240 + iota
	opEvalSha
)

// scriptCall is one script run through the node's queue, and its reply.
// It receives its own answer (adapter.Receiver).
type scriptCall struct {
	verb, body string // EVAL and the source, or EVALSHA and the SHA1
	keys, args []string
	res        reply
	err        error
	done       chan struct{}
}

// Receive ends the call; its reply, when there is one, is in res.
func (c *scriptCall) Receive(_ int, _ bool, err error) {
	c.err = err
	close(c.done)
}

// command appends the call's command to buf.
func (c *scriptCall) command(buf []byte) []byte {
	argv := make([]string, 0, 3+len(c.keys)+len(c.args))
	argv = append(argv, c.verb, c.body, strconv.Itoa(len(c.keys)))
	argv = append(append(argv, c.keys...), c.args...)
	return appendCommand(buf, argv...)
}

// scripter is what the node runs its unbatched scripts with: a
// redis.Scripter over its queue when it pipelines on connections of its
// own (a *redis.Client's, or a cluster's masters'), else the client.
func (n *Node) scripter() redis.Scripter {
	if n.pipe == nil && n.masters == nil {
		return n.client
	}
	return queueScripter{n}
}

// queueScripter runs a go-redis Script's EVAL and EVALSHA through the
// node's queue (redis.Script.Run sends EVALSHA, then EVAL on NOSCRIPT,
// each before it returns, so both stay in the caller's order).
type queueScripter struct{ n *Node }

var _ redis.Scripter = queueScripter{}

// Eval runs script by EVAL; once the server answered, the node knows
// it has the script.
func (q queueScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := q.n.runScript(ctx, opEval, "EVAL", script, keys, args)
	if err := cmd.Err(); err == nil || isReply(err) {
		sum := sha1.Sum([]byte(script))
		q.n.loaded.Store(hex.EncodeToString(sum[:]), struct{}{})
	}
	return cmd
}

// EvalSha runs the script of SHA1 sum by EVALSHA when the node's server
// is known to have it; else it answers NOSCRIPT without sending anything,
// so that redis.Script.Run sends EVAL at once: a script's first run on a
// node costs one round trip, not two (EVALSHA, NOSCRIPT, then EVAL),
// which over a node answering seconds late was a grant's whole patience.
func (q queueScripter) EvalSha(ctx context.Context, sum string, keys []string, args ...any) *redis.Cmd {
	if _, ok := q.n.loaded.Load(sum); !ok {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(redisError("NOSCRIPT not sent: the server has not run the script for this node yet"))
		return cmd
	}
	return q.n.runScript(ctx, opEvalSha, "EVALSHA", sum, keys, args)
}

// isReply reports whether err is a reply of the server (an error reply,
// or redis.Nil for a null one): it answered, so it has the script it was
// sent, not a failure to get an answer.
func isReply(err error) bool {
	var r redis.Error
	return errors.As(err, &r)
}

func (q queueScripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return q.Eval(ctx, script, keys, args...)
}

func (q queueScripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return q.EvalSha(ctx, sha1, keys, args...)
}

func (q queueScripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return q.n.client.ScriptExists(ctx, hashes...)
}

func (q queueScripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return q.n.client.ScriptLoad(ctx, script)
}

// runScript queues one script run and waits for its reply or ctx's end,
// and returns it as go-redis would.
func (n *Node) runScript(ctx context.Context, op adapter.Op, verb, body string, keys []string, args []any) *redis.Cmd {
	c := &scriptCall{verb: verb, body: body, keys: keys, done: make(chan struct{})}
	c.args = make([]string, len(args))
	for i, a := range args {
		c.args[i] = argString(a)
	}
	req := adapter.Request{Op: op}
	if len(keys) > 0 {
		req.Key, req.Keys = keys[0], keys[1:] // for batch.Tails
	}
	cmd := redis.NewCmd(ctx)
	n.queue.Start(ctx, req, c, 0)
	select {
	case <-c.done:
	case <-ctx.Done():
		cmd.SetErr(ctx.Err())
		return cmd
	}
	if c.err != nil {
		cmd.SetErr(c.err)
		return cmd
	}
	v, err := c.res.value()
	if err != nil {
		cmd.SetErr(err)
	} else {
		cmd.SetVal(v)
	}
	return cmd
}

// argString formats a script argument as go-redis would.
func argString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case uint64:
		return strconv.FormatUint(v, 10)
	case []byte:
		return string(v)
	}
	return fmt.Sprint(a) // never: the node's own calls pass the types above
}

// value returns the reply as go-redis' Cmd holds it: a string, an int64,
// a []any (nil for a null element), redis.Nil for a null reply, or the
// node's error.
func (r reply) value() (any, error) {
	switch r.kind {
	case '-':
		return nil, r.err()
	case ':':
		return r.num, nil
	case '+':
		return r.str, nil
	case '$':
		if r.null {
			return nil, redis.Nil
		}
		return r.str, nil
	}
	if r.null { // '*'
		return nil, redis.Nil
	}
	out := make([]any, len(r.elems))
	for i, e := range r.elems {
		v, err := e.value()
		switch {
		case err == redis.Nil:
			v = nil
		case err != nil:
			v = err
		}
		out[i] = v
	}
	return out, nil
}
