package rueidis

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/slots"
	"dlm/redlock/scripts"
)

var _ adapter.MastersNode = (*Node)(nil)

// Replicas returns the replicas of the cluster's masters as the cluster
// reports them (adapter.ClusterNode); none when the node is not a cluster.
// It asks CLUSTER NODES of every server the client knows at once and
// takes the first answer, so that a hung master holds it up no longer
// than the others take; the answer is also the node's view of the
// cluster's masters (Masters, MasterOf).
func (n *Node) Replicas(ctx context.Context) ([]adapter.Replica, error) {
	if !n.cluster {
		return nil, nil
	}
	nodes := n.conn(ctx).Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	addr, txt, err := slots.FirstAnswer(ctx, addrs, func(ctx context.Context, a string) (string, error) {
		return clusterNodes(ctx, nodes[a])
	})
	if err != nil {
		return nil, err
	}
	n.view.Set(addr, txt)
	return scripts.ClusterReplicas(txt), nil
}

// Masters returns the cluster's masters as the last Replicas read them
// (adapter.MastersNode).
func (n *Node) Masters() []string { return n.view.Masters() }

// MasterOf returns the master of key's slot as the last Replicas read it
// (adapter.MastersNode).
func (n *Node) MasterOf(key string) string { return n.view.MasterOf(key) }

// ConnectMaster is Connect for the master at addr only
// (adapter.MastersNode): connected by a PING when the node knows none of
// its facts yet, else its facts read again.
func (n *Node) ConnectMaster(ctx context.Context, addr string) error {
	if !n.cluster {
		return n.Connect(ctx)
	}
	mc, ok := knownMaster(n.conn(ctx).Nodes(), addr)
	if !ok {
		return fmt.Errorf("rueidis: cluster master %s is not known to the client yet", addr)
	}
	return n.reach(ctx, mc, addr)
}

// clusterNodes returns the text of CLUSTER NODES as c's server writes it.
func clusterNodes(ctx context.Context, c rueidis.Client) (string, error) {
	return text(c.Do(ctx, c.B().ClusterNodes().Build()))
}

// text is the string of a reply that is text (CLUSTER NODES, INFO). Over
// RESP3 such a reply is a verbatim string, which rueidis returns with its
// format in front ("txt:"): that prefix is cut, or the first line of the
// text would begin with it (the first node of CLUSTER NODES then has an
// id no other line names).
func text(r rueidis.RedisResult) (string, error) {
	m, err := r.ToMessage()
	if err != nil {
		return "", err
	}
	s, err := m.ToString()
	if err != nil {
		return "", err
	}
	if !m.IsString() && len(s) >= 4 && s[3] == ':' {
		s = s[4:] // a verbatim string: its three-letter format and a colon
	}
	return s, nil
}
