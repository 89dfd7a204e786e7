package rueidis

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
// through runRW and runRWFenced, sent at once rather than batched (as
// fencing's scripts are); the client waits for these answers before it
// releases.
type rwSteps = scripts.RWSteps

// runRW runs rw.lua with keys and args and returns its integer reply.
func (n *Node) runRW(ctx context.Context, keys []string, args ...string) (int64, error) {
	return n.evalKeys(ctx, n.rw, keys, args...).AsInt64()
}

// runRWFenced runs rw.lua's wacquirefenced and reads its {set, fence}
// reply; keys[1] is the fence key.
func (n *Node) runRWFenced(ctx context.Context, keys []string, args ...string) (bool, uint64, error) {
	return fencedReply(n.evalKeys(ctx, n.rw, keys, args...), strconv.Quote(keys[1]))
}

// ms is d in whole milliseconds, as the scripts take it.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
