package goredis_test

import (
	"testing"

	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// TestRequestsEndWithTheirContext: a request that joins a connection
// set-up under way (another request's, to a server that never answers)
// returns at its own context's end, for every method of the node.
func TestRequestsEndWithTheirContext(t *testing.T) {
	redlocktest.RunEndsWithContext(t, func(t *testing.T, addr string) adapter.Node {
		n, err := goredis.DialNode("redis://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
}
