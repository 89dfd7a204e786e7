package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestStatusNamesAForeignKeyThatBlocksTheLock: a key of another type at a
// resource's lock key (a hash, no ttl) refuses every lock of it; dlm
// status must say so and how to clear it, not call the resource free, and
// never print what the key holds.
func TestStatusNamesAForeignKeyThatBlocksTheLock(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	key := redlock.DefaultKeyPrefix + "wt"
	for _, s := range c.Servers {
		if err := s.Client().HSet(t.Context(), key, "field", "secret-value-9f3a").Err(); err != nil {
			t.Fatal(err)
		}
	}
	st := runDLM(t, time.Minute, nil, "status", "--nodes", nodes, "wt")
	if strings.Contains(st.stdout, "wt: free") || !strings.Contains(st.stdout, "redis-cli DEL") || !strings.Contains(st.stdout, key) {
		t.Errorf("dlm status wt, with a hash at %s on every node: exit %d, want it named with how to delete it:\n%s\n%s", key, st.code, st.stdout, st.stderr)
	}
	if strings.Contains(st.stdout+st.stderr, "secret-value-9f3a") || strings.Contains(st.stdout+st.stderr, "field") {
		t.Errorf("dlm status printed the foreign key's content:\n%s\n%s", st.stdout, st.stderr)
	}
}
