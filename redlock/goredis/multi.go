package goredis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

var (
	_ adapter.MultiNode        = (*Node)(nil)
	_ adapter.MultiFencingNode = (*Node)(nil)
)

// multiScripts are the scripts of a set of resources (adapter.MultiNode).
type multiScripts struct {
	acquire, release, extend, acquireFenced, raiseFences *redis.Script
}

func newMultiScripts() multiScripts {
	return multiScripts{
		acquire:       redis.NewScript(scripts.AcquireAll),
		release:       redis.NewScript(scripts.ReleaseAll),
		extend:        redis.NewScript(scripts.ExtendAll),
		acquireFenced: redis.NewScript(scripts.AcquireAllFenced),
		raiseFences:   redis.NewScript(scripts.RaiseFences),
	}
}

// AcquireAll sets every key to value with an expiry of ttl only if none
// exists, in one script (R3 for a set).
func (n *Node) AcquireAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	v, err := n.multi.acquire.Run(ctx, n.client, keys, value, ttl.Milliseconds()).Int64()
	return v == 1, err
}

// ReleaseAll deletes every key that holds value, announcing each deletion
// on its release channel when announce is set, in one script (R5, R14). It
// reports whether every key held value.
func (n *Node) ReleaseAll(ctx context.Context, keys []string, value string, announce bool) (bool, error) {
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
	v, err := n.multi.extend.Run(ctx, n.client, keys, value, ttl.Milliseconds()).Int64()
	return v == 1, err
}

// AcquireAllFenced is AcquireAll that also reads the largest fence value
// under fenceKeys when it set the keys, in one script (R18 phase 1).
func (n *Node) AcquireAllFenced(ctx context.Context, keys, fenceKeys []string, value string, ttl time.Duration) (bool, uint64, error) {
	res, err := n.multi.acquireFenced.Run(ctx, n.client, joinKeys(keys, fenceKeys), value, ttl.Milliseconds()).Slice()
	return fencedReply(res, err, fmt.Sprintf("one of %q", fenceKeys)) // fencing.go
}

// RaiseFences sets every fence under fenceKeys to token, with an expiry of
// retention (0: none), only if every key holds value and every fence is
// below token, in one script (R18 phase 2).
func (n *Node) RaiseFences(ctx context.Context, keys, fenceKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	v, err := n.multi.raiseFences.Run(ctx, n.client, joinKeys(keys, fenceKeys), value, strconv.FormatUint(token, 10), retention.Milliseconds()).Int64()
	return v == 1, err
}

// joinKeys is the KEYS of the fenced scripts of a set: the lock keys, then
// their fence keys.
func joinKeys(keys, fenceKeys []string) []string {
	return append(append(make([]string, 0, len(keys)+len(fenceKeys)), keys...), fenceKeys...)
}
