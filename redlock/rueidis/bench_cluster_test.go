package rueidis_test

import (
	"testing"

	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// BenchmarkClusterNode measures a cluster node's acquire+release pairs
// over a Redis Cluster of one master (redlocktest.BenchClusterNode):
//
//	go test -run '^$' -bench ClusterNode -benchmem ./redlock/rueidis/
func BenchmarkClusterNode(b *testing.B) {
	redlocktest.BenchClusterNode(b, func(url string) (adapter.HandoffNode, error) { return rueidis.DialNode(url) })
}
