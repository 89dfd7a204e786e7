package main

import (
	"errors"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestLockSignalNeverLost: a SIGTERM sent to dlm lock at any moment of
// its start (while it acquires, starts the guard, or the guard starts the
// command) either stops dlm before the command runs or reaches the
// command; it is never lost, so dlm never exits 0 after running the
// whole command as if nothing had been asked. Failed before (6 of 40
// runs): 'run 4: SIGTERM 14ms after the start: exit 0, the command ran to
// its end' (dlm forwarded the signal to the guard's group before the
// command was in it: the guard, first process of a PID namespace, dropped
// it, or took it as the group's), and 'run 3: SIGTERM 8ms after the
// start: exit 2; stdout ""' with no message (the guard's runtime died of
// it before it watched signals).
func TestLockSignalNeverLost(t *testing.T) {
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 40 {
		cmd, stdout, stderr := dlmCmd(t, nil, "lock", "--nodes", nodes, "--ttl", "20s", "sig",
			"--", "sh", "-c", "echo started; sleep 3; echo finished")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A jitter, not a wait for an event: the signal lands anywhere in
		// dlm's first tens of milliseconds (acquisition, guard, command).
		d := time.Duration(rng.IntN(60)) * time.Millisecond
		time.Sleep(d)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode() // -1: dlm died of the signal before it watched signals
		} else if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(stdout.String(), "finished"):
			t.Errorf("run %d: SIGTERM %v after the start: exit %d, the command ran to its end; stderr: %s", i, d, code, stderr.String())
		case code == 0 || code == 2:
			t.Errorf("run %d: SIGTERM %v after the start: exit %d; stdout %q, stderr: %s", i, d, code, stdout.String(), stderr.String())
		}
	}
}
