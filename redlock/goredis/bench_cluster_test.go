package goredis_test

import (
	"testing"

	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// BenchmarkClusterNode measures a cluster node's acquire+release pairs
// over a Redis Cluster of one master (redlocktest.BenchClusterNode):
//
//	go test -run '^$' -bench ClusterNode -benchmem ./redlock/goredis/
func BenchmarkClusterNode(b *testing.B) {
	redlocktest.BenchClusterNode(b, func(url string) (adapter.HandoffNode, error) { return goredis.DialNode(url) })
}
