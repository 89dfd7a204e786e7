package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A lock lost while its command ran, found only by the release, exits 74
// even when a node does not answer the release: the command runs under
// dlm lock (or dlm elect); while it runs, two of the three servers lose
// the lock's key (an operator's DEL, a flush, a restart without
// persistence) and the lock is taken on one of them by another client;
// then the third server hangs. The release finds the key deleted on the
// first server, another value (or none) on the second, and no answer from
// the third: it cannot show that a quorum held the lock to the end, and a
// node that granted it says it did not. dlm exited 0 before (the release
// was "incomplete").
func TestLockLostThenANodeHangsExits74(t *testing.T) {
	redlocktest.Require(t)
	for _, tc := range []struct{ command, adapter, key string }{
		{"lock", "rueidis", "x"},
		{"elect", "goredis", "election:x"},
	} {
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			c := redlocktest.Start(t, 3)
			dir := t.TempDir()
			started, goOn := filepath.Join(dir, "started"), filepath.Join(dir, "go-on")
			args := []string{tc.command, "--adapter", tc.adapter, "--nodes", strings.Join(c.URLs(), ","), "--ttl", "30s", "x"}
			if tc.command == "elect" {
				args = append(args, "--id", "me")
			}
			args = append(args, "--", "sh", "-c", `touch "$1"; while [ ! -e "$2" ]; do sleep 0.02; done`, "sh", started, goOn)
			cmd, stdout, stderr := dlmCmd(t, nil, args...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			redlocktest.Eventually(t, 30*time.Second, func() bool { _, err := os.Stat(started); return err == nil },
				"the command started under the lock")
			key := redlock.DefaultKeyPrefix + tc.key
			for _, s := range c.Servers[1:] {
				if err := s.Client().Del(t.Context(), key).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Servers[1].Client().Set(t.Context(), key, "another client's value", 30*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			c.Servers[2].Freeze()
			t.Cleanup(c.Servers[2].Thaw)
			if err := os.WriteFile(goOn, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			err := waitExit(t, cmd, done, 60*time.Second, "dlm %s did not finish\nstdout: %s\nstderr: %s", tc.command, stdout, stderr)
			code := 0
			if ee, ok := err.(interface{ ExitCode() int }); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != exitLockLost || !strings.Contains(stderr.String(), "may have been lost") {
				t.Errorf("dlm %s: exit %d, want %d saying the lock may have been lost (a node that granted it holds another value, one hangs); stderr:\n%s",
					tc.command, code, exitLockLost, stderr)
			}
		})
	}
}
