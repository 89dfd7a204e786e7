package rueidis_test

import (
	"testing"

	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

func node(t testing.TB, s *redlocktest.Server) *rueidis.Node {
	t.Helper()
	n, err := rueidis.DialNode(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}
