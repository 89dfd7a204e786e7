package goredis_test

import (
	"testing"

	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// TestClusterMigration: the release subscription follows a slot's
// migration, and requests follow MOVED and ASK redirections
// (redlocktest.RunClusterMigration).
func TestClusterMigration(t *testing.T) {
	redlocktest.RunClusterMigration(t, func(url string) (adapter.HandoffNode, error) {
		return goredis.DialNode(url)
	}, goredis.ChannelPrefix)
}
