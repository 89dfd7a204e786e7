package main

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// TestAttack2NodeDirAfterDashDash: --dir given to redis-server after --
// overrides dlm node's --dir (the help says arguments after -- override
// the defaults), so the data directory's lock file and the restart marker
// sit in a directory that holds no data. A second dlm node whose own --dir
// differs but whose redis-server gets the same -- --dir must be refused,
// as a second node on the same --dir is; it served the same AOF directory.
func TestAttack2NodeDirAfterDashDash(t *testing.T) {
	t.Skip("attack2 finding 3")
	redlocktest.Require(t)
	shared := t.TempDir()
	p1, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	first := startNodeArgs(t, p1, t.TempDir(), "--dir", shared)
	redlocktest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(first.stderr(), "serving") },
		"the first dlm node never served; log:\n%s", first.stderr())
	p2, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	second := startNodeArgs(t, p2, t.TempDir(), "--dir", shared)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(second.stderr(), "serving") {
		select {
		case err := <-second.done:
			second.done <- err
			return // refused: what we want
		case <-time.After(50 * time.Millisecond):
		}
	}
	if pings(p2) {
		t.Errorf("a second redis-server serves the data directory %s of a running dlm node; log:\n%s", shared, second.stderr())
	}
}

// startNodeArgs starts dlm node on port with the data directory dir and
// extra redis-server arguments after --.
func startNodeArgs(t *testing.T, port int, dir string, extra ...string) *nodeRun {
	t.Helper()
	args := append([]string{"node", "--port", strconv.Itoa(port), "--dir", dir, "--max-ttl", "1s", "--", "--loglevel", "warning"}, extra...)
	cmd, _, stderr := dlmCmd(t, nil, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &nodeRun{t: t, done: make(chan error, 1), stderr: stderr.String}
	go func() { n.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return n
}
