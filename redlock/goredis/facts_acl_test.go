package goredis_test

import (
	"testing"

	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// The facts name what the server refused to the node's user, and what it
// disables (redlocktest.RunFactsConformance).
func TestFactsNameWhatTheUserMayNotRun(t *testing.T) {
	redlocktest.RunFactsConformance(t, func(url string) (adapter.FactsNode, error) { return goredis.DialNode(url) })
}
