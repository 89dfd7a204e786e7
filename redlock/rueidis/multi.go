package rueidis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
	"dlm/redlock/internal/slots"
	"dlm/redlock/scripts"
)

var (
	_ adapter.MultiNode = (*Node)(nil)
)

// multiScripts are the scripts of a set of resources (adapter.MultiNode).
// AcquireAll, ReleaseAll and ExtendAll go through the node's batches
// (batch.go) like the requests on one key, and so keep Start order with
// them; the fenced ones are blocking calls, as for one key.
type multiScripts struct {
	acquireFenced, raiseFences, restore *batch.Script
}

func newMultiScripts() multiScripts {
	return multiScripts{
		acquireFenced: batch.NewScript(scripts.AcquireAllFenced),
		raiseFences:   batch.NewScript(scripts.RaiseFences),
		restore:       batch.NewScript(scripts.RestoreAll),
	}
}

// multiCommand builds the command of req, an operation on the set
// req.Keys, run by s: by EVALSHA, or by EVAL when eval is set or the node
// is not known to have the script.
func (n *Node) multiCommand(s *batch.Script, req adapter.Request, eval bool) rueidis.Completed {
	c := n.sender.client // the batch's (batch.go)
	var arg2 string
	switch req.Op {
	case adapter.OpAcquireAll, adapter.OpExtendAll:
		arg2 = strconv.FormatInt(req.TTL.Milliseconds(), 10)
	case adapter.OpReleaseAllAnnounce:
		arg2 = ChannelPrefix
	}
	nk := int64(len(req.Keys))
	if eval || !s.Cached.Load() {
		return c.B().Eval().Script(s.Src).Numkeys(nk).Key(req.Keys...).Arg(req.Value, arg2).Build()
	}
	return c.B().Evalsha().Sha1(s.SHA).Numkeys(nk).Key(req.Keys...).Arg(req.Value, arg2).Build()
}

// AcquireAll sets every key to value with an expiry of ttl only if none
// exists, in one script, in the node's next batch (R3 for a set).
func (n *Node) AcquireAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, adapter.Request{Op: adapter.OpAcquireAll, Keys: keys, Value: value, TTL: ttl})
}

// ReleaseAll deletes every key that holds value, announcing each deletion
// on ChannelPrefix+key when announce is set, in one script, in the node's
// next batch (R5, R14). It reports whether every key held value.
func (n *Node) ReleaseAll(ctx context.Context, keys []string, value string, announce bool) (bool, error) {
	op := adapter.OpReleaseAll
	if announce {
		op = adapter.OpReleaseAllAnnounce
	}
	return n.do(ctx, adapter.Request{Op: op, Keys: keys, Value: value})
}

// ExtendAll resets every key's expiry to ttl only if every key holds value,
// in one script, in the node's next batch (R17 for a set).
func (n *Node) ExtendAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, adapter.Request{Op: adapter.OpExtendAll, Keys: keys, Value: value, TTL: ttl})
}

// RestoreAll sets every key to value with an expiry of ttl only if each
// is missing or holds value already, in one script, per hash slot on a
// cluster node (an extension's restore of a set).
func (n *Node) RestoreAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	if n.cluster && len(slots.Split(keys)) > 1 { // cluster.go
		ok, _, err := n.fencedSplit(ctx, keys, nil, value, false, func(keys, _ []string) (bool, uint64, error) {
			ok, err := n.RestoreAll(ctx, keys, value, ttl)
			return ok, 0, err
		})
		return ok, err
	}
	v, err := n.evalKeys(ctx, n.multi.restore, keys, value, strconv.FormatInt(ttl.Milliseconds(), 10)).AsInt64()
	return v == 1 && err == nil, err
}

// AcquireAllFenced is AcquireAll that also reads the largest fence value
// under fenceKeys when it set the keys, in one script (R18 phase 1).
func (n *Node) AcquireAllFenced(ctx context.Context, keys, fenceKeys []string, value string, ttl time.Duration) (bool, uint64, error) {
	if n.cluster && len(slots.Split(keys)) > 1 { // cluster.go
		return n.fencedSplit(ctx, keys, fenceKeys, value, true, func(keys, fenceKeys []string) (bool, uint64, error) {
			return n.AcquireAllFenced(ctx, keys, fenceKeys, value, ttl)
		})
	}
	r := n.evalKeys(ctx, n.multi.acquireFenced, joinKeys(keys, fenceKeys), value, strconv.FormatInt(ttl.Milliseconds(), 10))
	return fencedReply(r, fmt.Sprintf("one of %q", fenceKeys)) // fencing.go
}

// RaiseFences sets every fence under fenceKeys to token, with an expiry of
// retention (0: none), only if every key holds value and every fence is
// below token, in one script (R18 phase 2).
func (n *Node) RaiseFences(ctx context.Context, keys, fenceKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	if n.cluster && len(slots.Split(keys)) > 1 { // cluster.go
		ok, _, err := n.fencedSplit(ctx, keys, fenceKeys, value, false, func(keys, fenceKeys []string) (bool, uint64, error) {
			ok, err := n.RaiseFences(ctx, keys, fenceKeys, value, token, retention)
			return ok, 0, err
		})
		return ok, err
	}
	v, err := n.evalKeys(ctx, n.multi.raiseFences, joinKeys(keys, fenceKeys), value,
		strconv.FormatUint(token, 10), strconv.FormatInt(retention.Milliseconds(), 10)).AsInt64()
	return v == 1 && err == nil, err
}
