package main

import (
	"strings"
	"testing"
	"time"
)

// The election NAME campaigns for the lock "election:NAME": dlm lock and
// dlm acquire refuse that name (exit 64), which would block the election
// and whose fencing token would pass for a leader's term. Before, `dlm
// lock election:e2` kept `dlm elect e2` from being elected. The check
// comes before any node is reached.
func TestLockRefusesElectionNames(t *testing.T) {
	for _, args := range [][]string{
		{"lock", "--nodes", "redis://127.0.0.1:1", "election:e2", "--", "true"},
		{"acquire", "--nodes", "redis://127.0.0.1:1", "election:e2"},
		{"lock", "--nodes", "redis://127.0.0.1:1", "jobs", "election:e2", "--", "true"},
	} {
		r := runDLM(t, time.Minute, nil, args...)
		if r.code != 64 || !strings.Contains(r.stderr, `election "e2"`) || !strings.Contains(r.stderr, "dlm elect") {
			t.Errorf("dlm %q: exit %d, stderr %q; want 64 and a message naming election \"e2\" and dlm elect", args, r.code, r.stderr)
		}
	}
	// A name that only contains the word is a lock like any other.
	r := runDLM(t, time.Minute, nil, "lock", "--nodes", "redis://127.0.0.1:1", "my-election:e2", "--", "true")
	if r.code == 64 {
		t.Errorf("dlm lock my-election:e2 refused as bad usage: %s", r.stderr)
	}
}
