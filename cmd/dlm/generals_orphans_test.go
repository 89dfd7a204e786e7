//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"dlm/redlock/redlocktest"
)

// TestGeneralsChildrenDieWithDlm: dlm generals --transport tcp runs each
// general as a `dlm generals serve` child. When dlm dies of a signal it
// cannot catch (SIGKILL: the OOM killer, a CI job's timeout) its children
// die with it at once, and SIGHUP (the terminal closed) stops the run as
// SIGTERM does: one line saying so, exit 69, no child left. A silent
// traitor and a one-minute round keep the run waiting on its deadlines
// (about five minutes) until the signal, so a child that outlives dlm is
// caught by the bound, not freed by its own end.
// (Regression: the children ran on as orphans until the run's last
// deadline, 58 s by hand with a 20 s round; SIGHUP killed dlm, exit 129,
// and left them too.)
func TestGeneralsChildrenDieWithDlm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		// group: the signal goes to dlm's whole process group, as a
		// closed terminal sends SIGHUP to its jobs; else to dlm alone.
		group bool
		// stops: dlm catches the signal and says that the run stopped.
		stops bool
	}{
		{name: "SIGKILL", sig: syscall.SIGKILL},
		{name: "SIGHUP", sig: syscall.SIGHUP, stops: true},
		{name: "SIGHUP to the group", sig: syscall.SIGHUP, group: true, stops: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd, _, stderr := dlmCmd(t, nil, "generals", "--transport", "tcp", "--faulty", "3",
				"--strategy", "silent", "--round-timeout", "1m")
			cmd.SysProcAttr.Setpgid = true // dlm leads its own group, as a shell's job does
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var kids []int
			redlocktest.Eventually(t, 30*time.Second, func() bool {
				kids = kids[:0]
				for _, k := range childrenOf(cmd.Process.Pid) {
					if socketsOf(k) >= 2 { // listening and a link: the run is under way
						kids = append(kids, k)
					}
				}
				return len(kids) == 4
			}, "the 4 generals never linked up; stderr: %s", stderr)
			gone := watchExits(t, kids)
			to := cmd.Process.Pid
			if tc.group {
				to = -to
			}
			if err := syscall.Kill(to, tc.sig); err != nil {
				t.Fatal(err)
			}
			if left := gone(30 * time.Second); len(left) > 0 {
				t.Errorf("%d of 4 `dlm generals serve` children (pids %v) still ran 30s after %s", len(left), left, tc.name)
			}
			err := <-done
			if !tc.stops {
				return
			}
			if code := exitOf(err); code != exitCouldNotRun {
				t.Errorf("exit %d (%v), want %d (the run was interrupted); stderr: %s", code, err, exitCouldNotRun, stderr)
			}
			out := strings.TrimSpace(stderr.String())
			if lines := strings.Split(out, "\n"); len(lines) != 1 || !strings.HasPrefix(out, "dlm: byzantine: run stopped") {
				t.Errorf("stderr has %d lines, want one saying the run stopped:\n%.600s", len(lines), out)
			}
		})
	}
}

// watchExits watches the processes pids (not necessarily this process's
// children) and returns a function that waits up to bound for all of them
// to exit and returns those still running then. A process that exits
// while watched is never mistaken for a later one of the same pid.
// Whatever the test finds, none of them is left running after it.
func watchExits(t *testing.T, pids []int) func(bound time.Duration) []int {
	t.Helper()
	fds := make([]int, len(pids)) // a pidfd each, or -1: look in /proc
	for i, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			fd = -1 // gone already (ESRCH), or a kernel without pidfds
		}
		fds[i] = fd
		t.Cleanup(func() {
			if fd < 0 {
				if running(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				return
			}
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			unix.Close(fd)
		})
	}
	return func(bound time.Duration) []int {
		end := time.Now().Add(bound)
		for {
			var left []int
			var polls []unix.PollFd
			for i, pid := range pids {
				if fds[i] < 0 {
					if running(pid) {
						left = append(left, pid)
					}
					continue
				}
				// A pidfd reads ready once its process has exited.
				p := []unix.PollFd{{Fd: int32(fds[i]), Events: unix.POLLIN}}
				if n, err := unix.Poll(p, 0); err != nil || n == 0 {
					left = append(left, pid)
					polls = append(polls, p[0])
				}
			}
			wait := time.Until(end)
			if len(left) == 0 || wait <= 0 {
				return left
			}
			// Wakes as soon as a watched process exits; /proc is
			// looked at again every 20ms.
			wait = min(wait, 20*time.Millisecond)
			if len(polls) == 0 {
				time.Sleep(wait)
			} else {
				_, _ = unix.Poll(polls, int(wait.Milliseconds()))
			}
		}
	}
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
