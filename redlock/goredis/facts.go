package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

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
	info, err := n.client.Info(ctx, "server").Result()
	if err != nil {
		return adapter.Facts{}, err
	}
	maxTTL, err := n.client.Get(ctx, adapter.MaxTTLKey).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return adapter.Facts{}, err
	}
	cfg, cerr := n.client.ConfigGet(ctx, "append*").Result()
	return adapter.ParseFacts(info, maxTTL, cfg["appendonly"], cfg["appendfsync"], cerr == nil && cfg["appendfsync"] != ""), nil
}
