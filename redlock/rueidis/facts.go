package rueidis

import (
	"context"

	"github.com/redis/rueidis"

	"dlm/redlock/adapter"
)

var _ adapter.FactsNode = (*Node)(nil)

// Facts reads what the node tells about itself (adapter.FactsNode): its
// run id (INFO server), the max ttl a `dlm node` advertises
// (adapter.MaxTTLKey) and its persistence (CONFIG GET appendonly,
// appendfsync; unknown when CONFIG is refused). Three requests, made when
// the client checks its nodes (redlock.Client.CheckNodes), never on the
// path of a lock. A Redis Cluster node answers the zero Facts: each of its
// masters has its own.
func (n *Node) Facts(ctx context.Context) (adapter.Facts, error) {
	if n.Cluster() {
		return adapter.Facts{}, nil
	}
	c := n.conn(ctx)
	info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return adapter.Facts{}, err
	}
	maxTTL, err := c.Do(ctx, c.B().Get().Key(adapter.MaxTTLKey).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		return adapter.Facts{}, err
	}
	cfg, cerr := c.Do(ctx, c.B().ConfigGet().Parameter("append*").Build()).AsStrMap()
	return adapter.ParseFacts(info, maxTTL, cfg["appendonly"], cfg["appendfsync"], cerr == nil && cfg["appendfsync"] != ""), nil
}
