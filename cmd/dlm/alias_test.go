package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestAliasesOfOneServer: two URLs for one redis-server (127.0.0.1 and
// localhost, same run_id) are not two independent masters (R2): dlm lock
// refuses them with 64, dlm status flags them and exits 1.
func TestAliasesOfOneServer(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 2)
	port := strings.TrimPrefix(c.Servers[0].Addr(), "127.0.0.1:")
	nodes := strings.Join([]string{c.Servers[0].URL(), "redis://localhost:" + port, c.Servers[1].URL()}, ",")
	t.Run("lock", func(t *testing.T) {
		t.Parallel()
		r := runDLM(t, 30*time.Second, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "r", "--", "true")
		if r.code != exitUsage {
			t.Errorf("exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
		}
		if !strings.Contains(r.stderr, "same server") || !strings.Contains(r.stderr, "localhost:"+port) {
			t.Errorf("stderr %q does not name the two URLs of the same server", r.stderr)
		}
		if k := keysOn(c); len(k) != 0 {
			t.Errorf("lock keys written: %v", k)
		}
	})
	t.Run("status", func(t *testing.T) {
		t.Parallel()
		r := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes)
		if r.code != exitFailure {
			t.Errorf("exit %d, want %d; stdout: %s\nstderr: %s", r.code, exitFailure, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "same server") {
			t.Errorf("stdout does not flag the alias:\n%s", r.stdout)
		}
	})
}
