package rueidis

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

var _ adapter.FactsNode = (*Node)(nil)

// Facts returns what the node's servers told about themselves
// (adapter.FactsNode). A node of Dial or DialNode reads them in the
// handshake of each connection its client makes (fence.go): the server's
// run id, advertised max ttl (adapter.MaxTTLKey) and persistence, in the
// same write as the connection's other handshake commands, so no request
// of a lock pays for them. A cluster node has the facts of each master it
// connected to.
func (n *Node) Facts() ([]adapter.Facts, uint64) { return n.known.Get() }

// Connect makes the node's connection (each master's, for a cluster) if
// it has none, bounded by ctx (adapter.FactsNode): one PING per server
// (and CLUSTER NODES for a cluster) when the node knows no facts yet,
// nothing after. A node over a client given to NewNode, whose
// handshake it cannot see, reads the facts by five requests per server
// instead, on every call, and learns of a restart only then.
func (n *Node) Connect(ctx context.Context) error {
	if _, v := n.known.Get(); v > 0 && n.handshook {
		return nil
	}
	c := n.conn(ctx)
	if !n.cluster {
		return n.reach(ctx, c, n.name)
	}
	txt, err := clusterNodes(ctx, c)
	if err != nil {
		return err
	}
	nodes := c.Nodes()
	var errs []error
	for _, addr := range scripts.ClusterMasters(txt) {
		mc, ok := nodes[addr]
		if !ok {
			errs = append(errs, fmt.Errorf("rueidis: cluster master %s is not known to the client yet", addr))
			continue
		}
		errs = append(errs, n.reach(ctx, mc, addr))
	}
	return errors.Join(errs...)
}

// reach connects c by a PING, whose connection's handshake reads the
// facts; or, when the node cannot see the handshake, reads them by
// requests.
func (n *Node) reach(ctx context.Context, c rueidis.Client, addr string) error {
	if n.handshook {
		return c.Do(ctx, c.B().Ping().Build()).Error()
	}
	info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return err
	}
	if repl, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString(); err == nil {
		info += "\n" + repl
	}
	maxTTL, err := c.Do(ctx, c.B().Get().Key(adapter.MaxTTLKey).Build()).ToString()
	if err != nil {
		maxTTL = "" // absent, refused, or MOVED on a cluster master
	}
	cfg, _ := c.Do(ctx, c.B().ConfigGet().Parameter("append*").Build()).AsStrMap()
	if save, err := c.Do(ctx, c.B().ConfigGet().Parameter("save").Build()).AsStrMap(); err == nil && cfg != nil {
		cfg["save"] = save["save"]
	}
	if mem, err := c.Do(ctx, c.B().ConfigGet().Parameter("maxmemory*").Build()).AsStrMap(); err == nil && cfg != nil {
		cfg["maxmemory"], cfg["maxmemory-policy"] = mem["maxmemory"], mem["maxmemory-policy"]
	}
	if repl, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString(); err == nil {
		info += "\n" + repl
	}
	n.known.Set(adapter.ParseFacts(addr, info, maxTTL, cfg))
	return nil
}
