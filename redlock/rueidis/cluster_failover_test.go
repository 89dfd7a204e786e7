package rueidis_test

import (
	"testing"

	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// TestClusterFailover: a cluster node learns a master's replica and
// follows a failover to it (redlocktest.RunClusterFailover). Before the
// fix rueidis read the slot map only when a request failed or was
// redirected, so it never learned a replica that synced later.
func TestClusterFailover(t *testing.T) {
	redlocktest.RunClusterFailover(t, func(url string) (adapter.HandoffNode, error) {
		return rueidis.DialNode(url)
	}, func(n adapter.HandoffNode, addr string) bool { return knows(n.(*rueidis.Node), addr) })
}

// knows reports whether n's rueidis cluster client knows addr.
func knows(n *rueidis.Node, addr string) bool {
	_, ok := n.Client().Nodes()[addr]
	return ok
}

// TestClusterFailoverPastACutMaster: a cluster node follows a failover
// made while the old master, cut from its cluster, still answers
// (redlocktest.RunClusterFailoverPastACutMaster).
func TestClusterFailoverPastACutMaster(t *testing.T) {
	redlocktest.RunClusterFailoverPastACutMaster(t, func(url string) (adapter.HandoffNode, error) {
		return rueidis.DialNode(url)
	})
}
