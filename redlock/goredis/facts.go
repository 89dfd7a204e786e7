package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
)

var _ adapter.FactsNode = (*Node)(nil)

// Facts returns what the node's servers told about themselves
// (adapter.FactsNode): the handshake of each connection the node makes
// (conn.go) reads its server's run id, advertised max ttl
// (adapter.MaxTTLKey) and persistence, in the same write as the
// connection's other handshake commands, so no request of a lock pays for
// them. A cluster node has the facts of each master it connected to.
func (n *Node) Facts() ([]adapter.Facts, uint64) { return n.known.Get() }

// Connect makes the node's connection (each master's, for a cluster) if
// it has none, and reads again on a live one what a running server can
// change of its facts (its replication, its settings), bounded by ctx
// (adapter.FactsNode): the client calls it before its first lock and then
// while it locks, every few seconds. A node over a client it cannot
// pipeline on (NewNode) has no connection of its own: it reads the facts
// by requests through go-redis instead (each master's, for a cluster), so
// it learns of a restart only when Connect is called again.
func (n *Node) Connect(ctx context.Context) error {
	switch {
	case n.pipe != nil:
		return n.pipe.refresh(ctx)
	case n.masters != nil:
		return n.masters.connect(ctx)
	case n.cluster != nil:
		return n.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return n.readFacts(ctx, c, c.Options().Addr)
		})
	}
	return n.readFacts(ctx, n.client, n.name)
}

// readFacts reads the facts of the server behind c by requests, naming
// what the server refused (adapter.Facts.Refused).
func (n *Node) readFacts(ctx context.Context, c redis.Cmdable, addr string) error {
	var declined adapter.Facts // what the server refused (Decline)
	refuses := func(err error, what string) bool {
		var re redis.Error
		return errors.As(err, &re) && declined.Decline(what, re.Error())
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil && !refuses(err, adapter.RefusedInfo) {
		return err
	}
	for _, section := range []string{"replication", "cluster"} {
		if more, err := c.Info(ctx, section).Result(); err == nil {
			info += "\n" + more
		}
	}
	maxTTL, err := c.Get(ctx, adapter.MaxTTLKey).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		refuses(err, adapter.RefusedMaxTTL)
		maxTTL = "" // refused, or MOVED on a cluster master
	}
	cfg, err := c.ConfigGet(ctx, "append*").Result()
	refuses(err, adapter.RefusedConfig)
	if save, err := c.ConfigGet(ctx, "save").Result(); err == nil && cfg != nil {
		cfg["save"] = save["save"]
	}
	if mem, err := c.ConfigGet(ctx, "maxmemory*").Result(); err == nil && cfg != nil {
		cfg["maxmemory"], cfg["maxmemory-policy"] = mem["maxmemory"], mem["maxmemory-policy"]
	}
	if err := c.ClientKillByFilter(ctx, killProbe[2:]...).Err(); err != nil {
		refuses(err, adapter.RefusedClient)
	}
	f := adapter.ParseFacts(addr, info, maxTTL, cfg)
	f.Declined(declined)
	n.known.Set(f)
	return nil
}
