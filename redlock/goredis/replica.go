package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/slots"
	"dlm/redlock/scripts"
)

var _ adapter.MastersNode = (*Node)(nil)

// Replicas returns the replicas of the cluster's masters as the cluster
// reports them (adapter.ClusterNode); none when the node is not a cluster.
// It asks CLUSTER NODES of every server of the cluster at once and takes
// the first answer (anyClusterNodes), so that a hung master holds it up
// no longer than the others take; the answer is also the node's view of
// the cluster's masters (Masters, MasterOf).
func (n *Node) Replicas(ctx context.Context) ([]adapter.Replica, error) {
	if n.cluster == nil {
		return nil, nil
	}
	addr, txt, err := n.anyClusterNodes(ctx)
	if err != nil {
		return nil, err
	}
	n.view.Set(addr, txt)
	return scripts.ClusterReplicas(txt), nil
}

// anyClusterNodes is CLUSTER NODES of the first server of the cluster
// that answers, with its address: over the node's own master connections
// (ownClusterNodes), else the seeds' (seedClusterNodes), else go-redis'
// clients of every server (firstClusterNodes). None goes through the
// cluster client's command routing, which first asks one server, picked
// at random, for the command table (COMMAND): a hung one made go-redis
// log "getting command info: i/o timeout".
func (n *Node) anyClusterNodes(ctx context.Context) (string, string, error) {
	addr, txt, err := n.ownClusterNodes(ctx)
	if err != nil {
		addr, txt, err = n.seedClusterNodes(ctx)
	}
	if err != nil {
		addr, txt, err = n.firstClusterNodes(ctx)
	}
	return addr, txt, err
}

// ownClusterNodes is the first answer to CLUSTER NODES of the masters
// the node has connections of its own to (masterPipes), asked at once
// over them, with its master's address: go-redis' own ways to ask every
// server (ForEachShard) first read the slot map again from one seed after
// another under the caller's deadline, which a hung seed uses up. An
// error when the node has no such connection.
func (n *Node) ownClusterNodes(ctx context.Context) (string, string, error) {
	if n.masters == nil {
		return "", "", errors.New("goredis: no connection of the node's own")
	}
	n.masters.mu.Lock()
	pipes := make(map[string]*pipe, len(n.masters.pipes))
	for a, p := range n.masters.pipes {
		pipes[a] = p
	}
	n.masters.mu.Unlock()
	var addrs []string
	for a, p := range pipes {
		if w, err := p.live(); err == nil && w != nil {
			addrs = append(addrs, a) // connected: no dial to wait for
		}
	}
	if len(addrs) == 0 {
		return "", "", errors.New("goredis: no live connection of the node's own")
	}
	return slots.FirstAnswer(ctx, addrs, func(ctx context.Context, a string) (string, error) {
		f, err := pipes[a].write(ctx, appendCommand(nil, "CLUSTER", "NODES"), 1)
		if err != nil {
			return "", err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		if f.err != nil {
			return "", f.err
		}
		r := f.res[0]
		if err := r.err(); err != nil {
			return "", err
		}
		if r.kind != '$' || r.null {
			return "", errors.New("goredis: CLUSTER NODES answered no text")
		}
		return r.str, nil
	})
}

// seedClusterNodes is the first answer to CLUSTER NODES of the cluster
// client's seed addresses, asked at once, each over a client of its own
// made with the cluster client's settings and closed after (or by the
// node's Close, whichever comes first): the way of a
// node that has no connection of its own yet (a new client), without
// go-redis' reading of its slot map, which asks one seed after another.
// An error for a cluster client whose connections run a hook that only
// go-redis can run (OnConnect, a StreamingCredentialsProvider).
func (n *Node) seedClusterNodes(ctx context.Context) (string, string, error) {
	o := n.cluster.Options()
	if n.masters == nil || o.CredentialsProvider != nil || o.CredentialsProviderContext != nil {
		return "", "", errors.New("goredis: the cluster client's connections need go-redis")
	}
	return slots.FirstAnswer(ctx, o.Addrs, func(ctx context.Context, addr string) (string, error) {
		c, done, err := n.masters.asker(addr) // cluster.go: closed by the node's Close
		if err != nil {
			return "", err
		}
		defer done()
		return c.ClusterNodes(ctx).Result()
	})
}

// firstClusterNodes is the first answer to CLUSTER NODES of the servers
// of go-redis' slot map, asked at once, with its server's address; the
// others are cancelled.
func (n *Node) firstClusterNodes(ctx context.Context) (string, string, error) {
	// The requests still out end by ctx's deadline, not cancelled
	// (slots.FirstAnswer says why).
	actx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		actx, cancel = context.WithDeadline(actx, d)
	}
	type answer struct{ addr, txt string }
	got := make(chan answer, 1)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- n.cluster.ForEachShard(actx, func(ctx context.Context, c *redis.Client) error {
			txt, err := c.ClusterNodes(ctx).Result()
			if err != nil {
				return err
			}
			select {
			case got <- answer{c.Options().Addr, txt}:
			default:
			}
			return nil
		})
	}()
	select {
	case a := <-got:
		return a.addr, a.txt, nil
	case <-ctx.Done():
		return "", "", context.Cause(ctx)
	case err := <-done:
		select {
		case a := <-got:
			return a.addr, a.txt, nil
		default:
		}
		if err == nil {
			err = errors.New("goredis: the cluster's slot map names no server")
		}
		return "", "", err
	}
}

// Masters returns the cluster's masters as the last Replicas read them
// (adapter.MastersNode).
func (n *Node) Masters() []string { return n.view.Masters() }

// MasterOf returns the master of key's slot (adapter.MastersNode): the one
// the node routes key's requests to when it has read the servers' slot
// map (slotmap.go), else the one the last Replicas named.
func (n *Node) MasterOf(key string) string {
	if n.masters != nil {
		if addr := n.masters.owners.owner(key); addr != "" {
			return addr
		}
	}
	return n.view.MasterOf(key)
}

// ConnectMaster is Connect for the master at addr only
// (adapter.MastersNode): its connection made if it has none, its facts
// read again.
func (n *Node) ConnectMaster(ctx context.Context, addr string) error {
	if n.cluster == nil {
		return n.Connect(ctx)
	}
	if n.masters != nil {
		// Not through go-redis' ForEachMaster, which reads its slot map
		// first (masterPipes.of says why).
		p, err := n.masters.at(addr) // cluster.go
		if err != nil {
			return err
		}
		return p.refresh(ctx) // conn.go
	}
	found := false
	err := n.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if c.Options().Addr != addr {
			return nil
		}
		found = true
		if n.masters == nil {
			return n.readFacts(ctx, c, addr)
		}
		p, err := n.masters.pipeOf(c.Options())
		if err == nil {
			err = p.refresh(ctx)
		}
		return err
	})
	if err == nil && !found {
		err = errors.New("goredis: cluster master " + addr + " is not in the client's slot map")
	}
	return err
}
