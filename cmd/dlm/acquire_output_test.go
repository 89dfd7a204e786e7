package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestAcquireHandleUndeliverable: dlm acquire whose handle cannot reach a
// reader exits 73 and leaves no lock: a standard output whose reader is
// gone (the write fails with EPIPE; before, dlm died of SIGPIPE with the
// lock held for its whole ttl), and one that is /dev/null or closed (the
// runtime opens /dev/null in its place; before, exit 0 with the handle
// gone), which is refused before anything is acquired.
func TestAcquireHandleUndeliverable(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	// --node-timeout 1s, as the other acquisitions of these tests: with the
	// default (50ms, up to 1s for a fresh client), a make test at load 34
	// timed out 2 of the 3 nodes ("reader gone: dlm acquire: exit status
	// 69, want exit 73 ... 127.0.0.1:35095 timed out, 127.0.0.1:42473
	// timed out"), which is not what is tested here.
	tests := []struct {
		name string
		run  func(resource string) (*exec.Cmd, *syncBuf)
	}{
		{"reader gone", func(resource string) (*exec.Cmd, *syncBuf) {
			cmd, _, stderr := dlmCmd(t, nil, "acquire", "--nodes", nodes, "--ttl", "60s", "--node-timeout", "1s", resource)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close() // the reader is gone before the handle is written
			t.Cleanup(func() { w.Close() })
			cmd.Stdout = w
			return cmd, stderr
		}},
		{"/dev/null", func(resource string) (*exec.Cmd, *syncBuf) {
			cmd, _, stderr := dlmCmd(t, nil, "acquire", "--nodes", nodes, "--ttl", "60s", "--node-timeout", "1s", resource)
			cmd.Stdout = nil // os/exec: /dev/null
			return cmd, stderr
		}},
		{"closed", func(resource string) (*exec.Cmd, *syncBuf) {
			cmd, _, stderr := dlmCmd(t, nil, "acquire", "--nodes", nodes, "--ttl", "60s", "--node-timeout", "1s", resource)
			cmd.Args = append([]string{"sh", "-c", `exec "$0" "$@" >&-`}, cmd.Args...)
			cmd.Path = "/bin/sh"
			cmd.Stdout = nil
			return cmd, stderr
		}},
	}
	for i, tt := range tests {
		resource := "orphan" + string(rune('a'+i))
		cmd, stderr := tt.run(resource)
		runErr := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(runErr, &ee) || ee.ExitCode() != exitCantCreate {
			t.Errorf("%s: dlm acquire: %v, want exit %d; stderr %q", tt.name, runErr, exitCantCreate, stderr.String())
		}
		st := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, resource)
		if !strings.Contains(st.stdout, resource+": free") {
			t.Errorf("%s: dlm acquire with an unreadable stdout (%v, stderr %q) left the lock held: %s", tt.name, runErr, stderr.String(), st.stdout)
		}
	}
}
