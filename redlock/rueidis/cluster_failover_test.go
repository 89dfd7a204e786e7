package rueidis_test

import (
	"testing"
	"time"

	rd "github.com/redis/rueidis"

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

// TestClusterFailoverOfAFrozenMaster: a cluster node follows the failover
// of a master that hangs (redlocktest.RunClusterFailoverOfAFrozenMaster)
// on its requests' timeouts, with rueidis' own reading of the slot map on
// a timer set to a minute. Before the fix rueidis read the map again after
// a redirection, a refusal or a closed connection, not after a timeout:
// the node followed at the next timed read only (1.1-1.7 s measured with
// the default 2 s period, clusters of 3 masters).
func TestClusterFailoverOfAFrozenMaster(t *testing.T) {
	redlocktest.RunClusterFailoverOfAFrozenMaster(t, func(url string) (adapter.HandoffNode, error) {
		return rueidis.DialNode(url, func(o *rd.ClientOption) {
			o.ClusterOption.ShardsRefreshInterval = time.Minute
		})
	}, func(n adapter.HandoffNode, addr string) bool { return knows(n.(*rueidis.Node), addr) })
}

// TestClusterOldMasterBack: a cluster node is not granted a lock by a
// master that comes back with its old slot map after its replica took its
// slots (redlocktest.RunClusterOldMasterBack).
func TestClusterOldMasterBack(t *testing.T) {
	t.Parallel()
	redlocktest.RunClusterOldMasterBack(t, func(url string) (adapter.HandoffNode, error) {
		return rueidis.DialNode(url)
	})
}
