package main

import (
	"strings"
	"testing"
	"time"
)

// TestNodeDirAfterDashDash (found by a review): --dir given to redis-server after --
// overrides dlm node's --dir (the help says arguments after -- override
// the defaults), so the data directory's lock file and the restart marker
// sit in a directory that holds no data. A second dlm node whose own --dir
// differs but whose redis-server gets the same -- --dir must be refused,
// as a second node on the same --dir is; it served the same AOF directory.
func TestNodeDirAfterDashDash(t *testing.T) {
	for _, dir := range []string{"--dir", "--DIR", "--dir=x"} {
		args := []string{"node", "--port", "1", "--dir", t.TempDir(), "--max-ttl", "1s", "--", dir}
		if !strings.Contains(dir, "=") {
			args = append(args, t.TempDir())
		}
		r := runDLM(t, 30*time.Second, nil, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "dlm node --dir DIR") {
			t.Errorf("dlm node ... -- %s: exit %d, want %d naming dlm node's own --dir; stderr %q", dir, r.code, exitUsage, r.stderr)
		}
	}
}
