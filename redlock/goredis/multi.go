package goredis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
	"dlm/redlock/scripts"
)

var (
	_ adapter.MultiNode = (*Node)(nil)
)

// multiScripts are the scripts of a set of resources (adapter.MultiNode).
type multiScripts struct {
	acquire, release, extend, restore, acquireFenced, raiseFences *redis.Script
}

// multiCommand appends the command of req, an operation on the set
// req.Keys, run by s, to buf: by EVALSHA, or by EVAL when eval is set or
// the node is not known to have the script.
func multiCommand(buf []byte, s *batch.Script, req adapter.Request, eval bool) []byte {
	var arg2 string
	switch req.Op {
	case adapter.OpAcquireAll, adapter.OpExtendAll:
		arg2 = strconv.FormatInt(req.TTL.Milliseconds(), 10)
	case adapter.OpReleaseAllAnnounce:
		arg2 = scripts.ChannelPrefix
	}
	verb, body := "EVALSHA", s.SHA
	if eval || !s.Cached.Load() {
		verb, body = "EVAL", s.Src
	}
	args := make([]string, 0, 3+len(req.Keys)+2)
	args = append(args, verb, body, strconv.Itoa(len(req.Keys)))
	args = append(args, req.Keys...)
	args = append(args, req.Value, arg2)
	return appendCommand(buf, args...)
}

func newMultiScripts() multiScripts {
	return multiScripts{
		acquire:       redis.NewScript(scripts.AcquireAll),
		release:       redis.NewScript(scripts.ReleaseAll),
		extend:        redis.NewScript(scripts.ExtendAll),
		restore:       redis.NewScript(scripts.RestoreAll),
		acquireFenced: redis.NewScript(scripts.AcquireAllFenced),
		raiseFences:   redis.NewScript(scripts.RaiseFences),
	}
}

// AcquireAll sets every key to value with an expiry of ttl only if none
// exists, in one script (R3 for a set).
func (n *Node) AcquireAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	if n.batched() {
		return n.do(ctx, adapter.Request{Op: adapter.OpAcquireAll, Keys: keys, Value: value, TTL: ttl})
	}
	if done, ok, _, err := n.split(ctx, keys, nil, value, true, noFence(func(keys []string) (bool, error) {
		return n.AcquireAll(ctx, keys, value, ttl)
	})); done { // cluster.go
		return ok, err
	}
	v, err := n.multi.acquire.Run(ctx, n.client, keys, value, ttl.Milliseconds()).Int64()
	return v == 1, err
}

// ReleaseAll deletes every key that holds value, announcing each deletion
// on its release channel when announce is set, in one script (R5, R14). It
// reports whether every key held value.
func (n *Node) ReleaseAll(ctx context.Context, keys []string, value string, announce bool) (bool, error) {
	if n.batched() {
		op := adapter.OpReleaseAll
		if announce {
			op = adapter.OpReleaseAllAnnounce
		}
		return n.do(ctx, adapter.Request{Op: op, Keys: keys, Value: value})
	}
	if done, ok, _, err := n.split(ctx, keys, nil, value, false, noFence(func(keys []string) (bool, error) {
		return n.ReleaseAll(ctx, keys, value, announce)
	})); done { // cluster.go
		return ok, err
	}
	prefix := ""
	if announce {
		prefix = scripts.ChannelPrefix
	}
	v, err := n.multi.release.Run(ctx, n.client, keys, value, prefix).Int64()
	return v == 1, err
}

// ExtendAll resets every key's expiry to ttl only if every key holds value,
// in one script (R17 for a set).
func (n *Node) ExtendAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	if n.batched() {
		return n.do(ctx, adapter.Request{Op: adapter.OpExtendAll, Keys: keys, Value: value, TTL: ttl})
	}
	if done, ok, _, err := n.split(ctx, keys, nil, value, false, noFence(func(keys []string) (bool, error) {
		return n.ExtendAll(ctx, keys, value, ttl)
	})); done { // cluster.go
		return ok, err
	}
	v, err := n.multi.extend.Run(ctx, n.client, keys, value, ttl.Milliseconds()).Int64()
	return v == 1, err
}

// RestoreAll sets every key to value with an expiry of ttl only if each
// is missing or holds value already, in one script, per hash slot on a
// cluster node (an extension's restore of a set). It goes through the
// node's queue where it has one, as the fenced steps do.
func (n *Node) RestoreAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	if done, ok, _, err := n.split(ctx, keys, nil, value, false, noFence(func(keys []string) (bool, error) {
		return n.RestoreAll(ctx, keys, value, ttl)
	})); done { // cluster.go
		return ok, err
	}
	v, err := n.multi.restore.Run(ctx, n.scripter(), keys, value, ttl.Milliseconds()).Int64()
	return v == 1, err
}

// AcquireAllFenced is AcquireAll that also reads the largest fence value
// under fenceKeys when it set the keys, in one script (R18 phase 1).
func (n *Node) AcquireAllFenced(ctx context.Context, keys, fenceKeys []string, value string, ttl time.Duration) (bool, uint64, error) {
	if done, ok, fence, err := n.split(ctx, keys, fenceKeys, value, true, func(keys, fenceKeys []string) (bool, uint64, error) {
		return n.AcquireAllFenced(ctx, keys, fenceKeys, value, ttl)
	}); done { // cluster.go
		return ok, fence, err
	}
	res, err := n.multi.acquireFenced.Run(ctx, n.scripter(), joinKeys(keys, fenceKeys), value, ttl.Milliseconds()).Slice()
	return fencedReply(res, err, fmt.Sprintf("one of %q", fenceKeys)) // fencing.go
}

// RaiseFences sets every fence under fenceKeys to token, with an expiry of
// retention (0: none), only if every key holds value and every fence is
// below token, in one script (R18 phase 2).
func (n *Node) RaiseFences(ctx context.Context, keys, fenceKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	if done, ok, _, err := n.split(ctx, keys, fenceKeys, value, false, func(keys, fenceKeys []string) (bool, uint64, error) {
		ok, err := n.RaiseFences(ctx, keys, fenceKeys, value, token, retention)
		return ok, 0, err
	}); done { // cluster.go
		return ok, err
	}
	v, err := n.multi.raiseFences.Run(ctx, n.scripter(), joinKeys(keys, fenceKeys), value, strconv.FormatUint(token, 10), retention.Milliseconds()).Int64()
	return v == 1, err
}

// joinKeys is the KEYS of the fenced scripts of a set: the lock keys, then
// their fence keys, then their floor keys when the script reads or
// repairs the fence floor (floor.go).
func joinKeys(keys, fenceKeys []string, floorKeys ...string) []string {
	return append(append(append(make([]string, 0, len(keys)+len(fenceKeys)+len(floorKeys)), keys...), fenceKeys...), floorKeys...)
}
