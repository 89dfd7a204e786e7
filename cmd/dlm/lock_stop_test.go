package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestLockStoppedGuardLostLock: the guard stopped alone (SIGSTOP), then
// the lock lost (a quorum of nodes flushed), with a command that ignores
// SIGTERM and a --grace far longer than the ttl. The command must be gone
// by the end of the lock's validity (at most a ttl after the flush), not
// at the end of the grace: the validity bounds the grace. Failed before:
// in a PID namespace nothing ended the command at the validity's end with
// its guard stopped, and dlm's SIGKILL came only after --grace ("processes
// [...] of the command still run 8s after the flush, past the lock's
// validity").
func TestLockStoppedGuardLostLock(t *testing.T) {
	const ttl = 3 * time.Second
	for _, tc := range []struct {
		name    string
		noPIDNS bool
	}{
		{"subreaper", true},
		{"namespace", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.noPIDNS && !canPIDNamespace() {
				t.Skip("no PID namespace for this process")
			}
			t.Parallel()
			c := redlocktest.Start(t, 3) // its own nodes: the flush is this case's
			mark := filepath.Join(t.TempDir(), "ready")
			args := []string{"lock", "--nodes", strings.Join(c.URLs(), ","), "--ttl", ttl.String(), "--node-timeout", "1s", "--grace", "60s"}
			if tc.noPIDNS {
				args = append(args, "--pid-namespace=false")
			}
			script := `export DLM_TEST_FAMILY="$1"; trap '' TERM; touch "$1"; while :; do sleep 1; done`
			cmd, _, stderr := dlmCmd(t, nil, append(args, "res", "--", "sh", "-c", script, "sh", mark)...)
			done := startReaped(t, cmd)
			redlocktest.Eventually(t, 20*time.Second, func() bool {
				return fileExists(mark) && len(familyOf(mark)) > 0
			}, "the command never started; stderr: %s", stderr)
			procs := dlmProcesses(cmd.Process.Pid)
			guard := procs[len(procs)-1]
			t.Cleanup(func() { _ = syscall.Kill(guard, syscall.SIGCONT) })
			kill(t, guard, syscall.SIGSTOP)
			for _, s := range c.Servers {
				if err := s.Client().FlushAll(t.Context()).Err(); err != nil {
					t.Fatal(err)
				}
			}
			flushed := time.Now()
			// The validity ends at most a ttl after the flush; what kills
			// the command may be a little late on a loaded machine, never
			// the grace's 60 s late.
			bound := ttl + 5*time.Second
			left := familyOf(mark)
			for len(left) > 0 && time.Since(flushed) < bound {
				time.Sleep(20 * time.Millisecond) // polling, bounded by bound
				left = familyOf(mark)
			}
			if len(left) > 0 {
				t.Fatalf("processes %v of the command still run %v after the flush, past the lock's validity (ttl %v); stderr: %s", left, bound, ttl, stderr)
			}
			_ = syscall.Kill(guard, syscall.SIGCONT)
			err := waitExit(t, cmd, done, 20*time.Second, "dlm did not end; stderr: %s", stderr)
			if code := exitOf(err); code != exitLockLost {
				t.Errorf("dlm exit %d, want %d; stderr: %s", code, exitLockLost, stderr)
			}
		})
	}
}
