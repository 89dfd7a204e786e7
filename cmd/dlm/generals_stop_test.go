package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestGeneralsCtrlCSaysOnce: Ctrl-C of a tcp run (SIGINT to dlm's whole
// process group, as a terminal sends it) ends the run at once and says
// so in one line, whatever the number of generals and instances that
// stopped. A silent traitor and a one-minute round keep the run waiting
// on its deadlines (about three minutes) until the signal.
// (Regression: the error joined one "run stopped" per general, each
// general's process printed its own, and an interactive run over tcp
// printed n x n of them.)
func TestGeneralsCtrlCSaysOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		// up reports whether the run is under way: dlm's signal handler
		// is installed and the generals listen.
		up func(pid int) bool
	}{
		{
			name: "a process per general",
			args: []string{"generals", "--transport", "tcp", "--faulty", "3", "--strategy", "silent", "--round-timeout", "1m"},
			up: func(pid int) bool {
				kids := childrenOf(pid)
				listening := 0
				for _, k := range kids {
					if socketsOf(k) > 0 {
						listening++
					}
				}
				return listening == 4
			},
		},
		{
			name: "interactive, generals in one process",
			args: []string{"generals", "--interactive", "--transport", "tcp", "--faulty", "3", "--strategy", "silent", "--round-timeout", "1m"},
			up:   func(pid int) bool { return socketsOf(pid) >= 4 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd, _, stderr := dlmCmd(t, nil, tc.args...)
			cmd.SysProcAttr.Setpgid = true // dlm leads its own group, as a shell's foreground job does
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			redlocktest.Eventually(t, 30*time.Second, func() bool { return tc.up(cmd.Process.Pid) }, "the generals never listened; stderr: %s", stderr)
			sent := time.Now()
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				t.Fatalf("dlm %s still ran 30s after Ctrl-C; stderr: %s", strings.Join(tc.args, " "), stderr)
			}
			took := time.Since(sent)
			if code := exitOf(err); code != exitCouldNotRun {
				t.Errorf("exit %d, want %d (the run was interrupted); stderr: %s", code, exitCouldNotRun, stderr)
			}
			out := strings.TrimSpace(stderr.String())
			if lines := strings.Split(out, "\n"); len(lines) != 1 || !strings.HasPrefix(out, "dlm: byzantine: run stopped") {
				t.Errorf("stderr has %d lines, want one saying the run stopped:\n%s", len(lines), out)
			}
			if n := strings.Count(out, "run stopped"); n != 1 {
				t.Errorf("stderr says %q %d times, want once:\n%.600s", "run stopped", n, out)
			}
			t.Logf("ended %v after Ctrl-C", took.Round(time.Millisecond))
		})
	}
}

// socketsOf counts the sockets process pid holds open.
func socketsOf(pid int) int {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
