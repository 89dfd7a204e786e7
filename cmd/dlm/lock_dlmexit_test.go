package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestLockDlmExitCode: a script tells dlm's own exits from its command's.
// With --dlm-exit-code N every exit dlm decides itself (the command not
// run: bad usage, lock held elsewhere, command not found; the lock lost
// while the command ran) is N, with dlm's line on stderr saying why; the
// command's own codes, 74 and 127 included, pass through unchanged and
// add no line of dlm's. Without the flag, a command that exits 74 itself
// after its lock was lost is still reported lost (dlm's line): the
// command's own 74 no longer hides the loss.
// Failed before: "unknown shorthand flag: 'E'" (exit 64) for every row
// with the flag, and the row "own 74 after a loss" exited 74 with no
// line on stderr (the release's finding was dropped as "said already").
func TestLockDlmExitCode(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	hold := func(t *testing.T) { // another holder on every node, for a minute
		for _, s := range c.Servers {
			if err := s.Client().Set(t.Context(), redlock.DefaultKeyPrefix+"held", "another-holder", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// loseThenExit is a command that releases its own lock by force (as
	// an operator might), then exits with its own code.
	loseThenExit := func(code string) []string {
		return []string{"sh", "-c", `"$1" release --nodes "$2" --force "$DLM_LOCK_RESOURCE" >/dev/null 2>&1 || exit 99; exit ` + code, "sh", dlmBin(), nodes}
	}
	lock := func(extra ...string) []string {
		return append([]string{"lock", "--nodes", nodes, "--ttl", "60s", "--node-timeout", "2s"}, extra...)
	}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T)
		args    []string
		want    int
		dlmLine string // what dlm's line on stderr says; "": no line of dlm's
	}{
		{"own 74 passes", nil, lock("-E", "200", "res", "--", "sh", "-c", "exit 74"), 74, ""},
		{"own 127 passes", nil, lock("-E", "200", "res", "--", "sh", "-c", "exit 127"), 127, ""},
		{"own 0 passes", nil, lock("-E", "200", "res", "--", "true"), 0, ""},
		{"held elsewhere", hold, lock("-E", "200", "held", "--", "true"), 200, "held elsewhere"},
		{"not found", nil, lock("--dlm-exit-code", "200", "res", "--", "/nonexistent/cmd"), 200, "/nonexistent/cmd"},
		{"bad usage", nil, lock("-E", "200", "--ttl", "-1s", "res", "--", "true"), 200, "--ttl"},
		{"bad flag after -E", nil, lock("-E", "200", "--no-such-flag", "res", "--", "true"), 200, "no-such-flag"},
		{"lost, own 3", nil, lock(append([]string{"-E", "200", "res", "--"}, loseThenExit("3")...)...), 200, "lost before the command ended"},
		{"lost, own 74", nil, lock(append([]string{"res", "--"}, loseThenExit("74")...)...), exitLockLost, "lost before the command ended"},
		{"lost, own 74, -E", nil, lock(append([]string{"-E", "200", "res", "--"}, loseThenExit("74")...)...), 200, "lost before the command ended"},
		{"out of range", nil, lock("-E", "256", "res", "--", "true"), exitUsage, "1 to 255"},
		{"zero", nil, lock("-E", "0", "res", "--", "true"), exitUsage, "1 to 255"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			r := runDLM(t, 60*time.Second, nil, tc.args...)
			if r.code != tc.want {
				t.Errorf("exit %d, want %d; stderr: %s", r.code, tc.want, r.stderr)
			}
			switch {
			case tc.dlmLine == "" && strings.Contains(r.stderr, "dlm"):
				t.Errorf("the command's own exit, yet dlm wrote on stderr: %q", r.stderr)
			case tc.dlmLine != "" && !strings.HasPrefix(r.stderr, "dlm"):
				t.Errorf("stderr %q does not start with dlm's line", r.stderr)
			case !strings.Contains(r.stderr, tc.dlmLine):
				t.Errorf("stderr %q does not say %q", r.stderr, tc.dlmLine)
			}
		})
	}
}

// TestOperationsDlmExitExample runs the --dlm-exit-code example of
// docs/operations.md with bash, against real nodes (--wait 1m cut to
// 1s): an import that exits 75 itself is the import's failure, not
// "another import is running", and a lock held elsewhere is dlm's.
func TestOperationsDlmExitExample(t *testing.T) {
	t.Parallel()
	bash, script := bashExample(t, "rc=0")
	c := redlocktest.Start(t, 3)
	for _, tt := range []struct {
		name   string
		code   string // import.sh's exit code
		held   bool   // the lock is held elsewhere
		output string
	}{
		{"success", "0", false, ""},
		{"import exits 75", "75", false, "the import failed (75)"},
		{"held elsewhere", "0", true, "the import did not run under its lock to the end (dlm said why)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.held {
				for _, s := range c.Servers {
					if err := s.Client().Set(t.Context(), redlock.DefaultKeyPrefix+"import", "another-holder", time.Minute).Err(); err != nil {
						t.Fatal(err)
					}
					defer s.Client().Del(context.WithoutCancel(t.Context()), redlock.DefaultKeyPrefix+"import")
				}
			}
			runImportExample(t, bash, script, strings.Join(c.URLs(), ","), tt.code, tt.output)
		})
	}
}
