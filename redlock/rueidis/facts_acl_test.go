package rueidis_test

import (
	"testing"

	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// The facts name what the server refused to the node's user, and what it
// disables (redlocktest.RunFactsConformance).
func TestFactsNameWhatTheUserMayNotRun(t *testing.T) {
	redlocktest.RunFactsConformance(t, func(url string) (adapter.FactsNode, error) { return rueidis.DialNode(url) })
}
