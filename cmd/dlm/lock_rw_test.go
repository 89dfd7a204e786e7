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

// TestLockReadWrite: dlm lock --read commands share a resource; --write and
// a plain dlm lock are refused while a reader runs, and --write gets it
// once the reader is done.
func TestLockReadWrite(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	dir := t.TempDir()
	ready, stop := filepath.Join(dir, "ready"), filepath.Join(dir, "stop")
	reader, _, stderr := dlmCmd(t, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "--read", "res", "--", "sh", "-c",
		`touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`, "sh", ready, stop)
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Process.Signal(syscall.SIGTERM); _ = reader.Wait() })
	redlocktest.Eventually(t, 20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil },
		"the first dlm lock --read never ran its command; stderr: %s", stderr)

	tests := []struct {
		name string
		args []string
		code int
	}{
		{"second reader", []string{"--read"}, 0},
		{"writer", []string{"--write"}, exitNotAcquired},
		{"plain lock", nil, exitNotAcquired},
	}
	for _, tt := range tests {
		args := append(append([]string{"lock", "--nodes", nodes, "--node-timeout", "1s"}, tt.args...), "res", "--", "true")
		r := runDLM(t, 30*time.Second, nil, args...)
		if r.code != tt.code {
			t.Errorf("%s while a reader runs: exit %d, want %d; stderr: %s", tt.name, r.code, tt.code, r.stderr)
		}
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := reader.Wait(); err != nil {
		t.Fatalf("the reader: %v; stderr: %s", err, stderr)
	}
	r := runDLM(t, 30*time.Second, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "--write", "--wait", "5s", "res", "--", "true")
	if r.code != 0 {
		t.Errorf("writer after the reader: exit %d, want 0; stderr: %s", r.code, r.stderr)
	}
	if keys := keysOn(c); len(keys) > 0 {
		t.Errorf("keys %v left after every dlm lock exited", keys)
	}
}
