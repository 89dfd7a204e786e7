package rueidis_test

import (
	"testing"

	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// TestClusterMigration: the release subscription follows a slot's
// migration, and requests follow MOVED and ASK redirections
// (redlocktest.RunClusterMigration).
func TestClusterMigration(t *testing.T) {
	redlocktest.RunClusterMigration(t, func(url string) (adapter.HandoffNode, error) {
		return rueidis.DialNode(url)
	}, rueidis.ChannelPrefix)
}
