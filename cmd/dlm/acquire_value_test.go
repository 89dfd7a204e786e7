package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestAcquireSameValueKeepsTheHolder: a second dlm acquire with the same
// --value-env (a CI run id reused by a re-run of the job) is refused as
// held elsewhere (75) and leaves the first holder's lock in place, over
// both adapters. Its failed attempt had released the keys that held its
// value, the first holder's: the lock was free while the first job still
// worked.
func TestAcquireSameValueKeepsTheHolder(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	env := []string{"MYV=0123456789abcdef0123456789abcdef01234567"}
	for _, adapt := range []string{"rueidis", "goredis"} {
		resource := "job-" + adapt
		r := runDLM(t, 30*time.Second, env, "acquire", "--adapter", adapt, "--nodes", nodes, "--ttl", "30s", "--value-env", "MYV", resource)
		if r.code != 0 {
			t.Fatalf("%s: first acquire: exit %d: %s", adapt, r.code, r.stderr)
		}
		first := strings.TrimSpace(r.stdout)
		r = runDLM(t, 30*time.Second, env, "acquire", "--adapter", adapt, "--nodes", nodes, "--ttl", "30s", "--value-env", "MYV", resource)
		if r.code != exitNotAcquired {
			t.Errorf("%s: second acquire with the same value: exit %d, want %d; stderr %q", adapt, r.code, exitNotAcquired, r.stderr)
		}
		if r := runDLM(t, 30*time.Second, []string{"DLM_HANDLE=" + first}, "extend", "--adapter", adapt, "--nodes", nodes); r.code != 0 {
			t.Errorf("%s: the first holder's lock is gone after a failed acquisition with its value: extend exit %d; stderr %q", adapt, r.code, r.stderr)
		}
	}
}
