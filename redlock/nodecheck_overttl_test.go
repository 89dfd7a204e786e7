package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// A ttl over the max ttl that several nodes advertise is one problem: one
// error, on one line, that names every node and its max ttl once, not the
// same sentence once per node.
func TestCheckNodesOverMaxTTLOneLine(t *testing.T) {
	nodes, mems := redlocktest.NewMemNodes(3)
	for i, m := range mems {
		m.SetFacts(adapter.Facts{MaxTTL: time.Duration(10+i) * time.Second})
	}
	c, err := redlock.New(nodes, redlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CheckNodes(t.Context())
	if !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("CheckNodes = %v, want %v", err, redlock.ErrInvalid)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Count(msg, "invalid argument") != 1 {
		t.Errorf("not one problem on one line: %q", msg)
	}
	for _, want := range []string{"m1 (10s)", "m2 (11s)", "m3 (12s)", "at most 10s", "--max-ttl 1m0s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
}
