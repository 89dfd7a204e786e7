package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestLockSeveralResources: dlm lock a b -- CMD locks both as one lock
// (the command sees DLM_LOCK_RESOURCE="a\nb"); while it runs, a dlm lock on a
// set that overlaps it on b exits 75 and leaves no key of its own set, one
// on a disjoint resource runs; once it ends, no key is left.
func TestLockSeveralResources(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	dir := t.TempDir()
	ready, env := filepath.Join(dir, "ready"), filepath.Join(dir, "env")
	holder, _, stderr := dlmCmd(t, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "b", "a", "--", "sh", "-c",
		`echo "$DLM_LOCK_RESOURCE" > "$2"; touch "$1"; while :; do sleep 0.05; done`, "sh", ready, env)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = holder.Process.Signal(syscall.SIGTERM)
			_ = holder.Wait()
		}
	}
	t.Cleanup(stop)
	redlocktest.Eventually(t, 20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil },
		"the first dlm lock never ran its command; stderr: %s", stderr)
	if b, err := os.ReadFile(env); err != nil || strings.TrimSpace(string(b)) != "a\nb" {
		t.Fatalf("DLM_LOCK_RESOURCE = %q (%v), want \"a\\nb\"", b, err)
	}

	r := runDLM(t, 30*time.Second, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "--wait", "3s", "c", "b", "--", "true")
	if r.code != exitNotAcquired || !strings.Contains(r.stderr, `lock "b,c" not acquired`) || !strings.Contains(r.stderr, "held elsewhere") {
		t.Errorf("overlapping set: exit %d, want %d, saying lock \"b,c\" is held elsewhere; stderr: %s", r.code, exitNotAcquired, r.stderr)
	}
	for _, s := range c.Servers {
		if k := s.MustKeys("dlm:lock:c"); len(k) != 0 {
			t.Errorf("%s: the failed set left %v", s.Addr(), k)
		}
	}
	r = runDLM(t, 30*time.Second, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "c", "d", "--", "true")
	if r.code != 0 {
		t.Errorf("disjoint set: exit %d, want 0; stderr: %s", r.code, r.stderr)
	}
	stop()
	redlocktest.Eventually(t, 5*time.Second, func() bool { return len(keysOn(c)) == 0 }, "keys left after the holder ended: %v", keysOn(c))
}
