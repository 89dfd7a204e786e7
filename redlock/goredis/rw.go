package goredis

import (
	"context"
	"strconv"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

var _ adapter.RWNode = (*Node)(nil)

// rwSteps gives Node the read-write locks of adapter.RWNode: each method
// (scripts.RWSteps) is one run of the shared script redlock/scripts/rw.lua,
// through runRW and runRWFenced.
type rwSteps = scripts.RWSteps

// runRW runs rw.lua with keys and args and returns its integer reply.
func (n *Node) runRW(ctx context.Context, keys []string, args ...string) (int64, error) {
	return n.rw.Run(ctx, n.scripter(), keys, anys(args)...).Int64()
}

// runRWFenced runs rw.lua's wacquirefenced and reads its {set, fence}
// reply; keys[1] is the fence key.
func (n *Node) runRWFenced(ctx context.Context, keys []string, args ...string) (bool, uint64, error) {
	res, err := n.rw.Run(ctx, n.scripter(), keys, anys(args)...).Slice()
	return fencedReply(res, err, strconv.Quote(keys[1]))
}

// anys is args as go-redis takes a script's arguments.
func anys(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// ms is d in whole milliseconds, as the scripts take it.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
