package rueidis

import (
	"context"

	"github.com/redis/rueidis"

	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

// Replicas returns the replicas of the cluster's masters as the cluster
// reports them (adapter.ClusterNode); none when the node is not a cluster.
func (n *Node) Replicas(ctx context.Context) ([]adapter.Replica, error) {
	if !n.cluster {
		return nil, nil
	}
	txt, err := clusterNodes(ctx, n.conn(ctx))
	if err != nil {
		return nil, err
	}
	return scripts.ClusterReplicas(txt), nil
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
