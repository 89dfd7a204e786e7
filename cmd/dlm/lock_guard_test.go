package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// canPIDNamespace reports whether this process may start a child in a new
// PID namespace, as dlm lock does for its guard on Linux when allowed.
func canPIDNamespace() bool {
	if !slices.Contains(guardIsolations(), isolatePID) {
		return false
	}
	c := exec.Command("true")
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	return c.Run() == nil
}

// childrenOf returns the pids of the children of pid.
func childrenOf(pid int) []int {
	var kids []int
	dir, _ := os.ReadDir("/proc")
	for _, e := range dir {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			k, _ := strconv.Atoi(e.Name())
			kids = append(kids, k)
		}
	}
	return kids
}

// TestLockCommandNeverOutlivesTheLock is a regression test: a
// dlm lock whose command has grandchildren (one of them in a session of
// its own, setsid, when PID namespaces are available) is killed with
// SIGKILL (dlm, its guard, or both at once as `pkill -9 dlm` does) or
// stopped with SIGSTOP past the ttl. Then a second client acquires the
// lock, which it can only once the first lock's validity is over, and no
// process of the first command may run any more. Before the fix, with
// both killed the sleeps ran on, and with dlm stopped the whole command
// did (the guard knew no deadline).
func TestLockCommandNeverOutlivesTheLock(t *testing.T) {
	c := redlocktest.Start(t, 3)
	urls := c.URLs()
	// A ttl and node timeout a loaded machine keeps: what is under test is
	// the guard, not how fast the nodes answer.
	const ttl, nodeTimeout = 3 * time.Second, time.Second
	pidns := canPIDNamespace()
	if !pidns {
		t.Logf("no PID namespace for this process: the guard runs as subreaper, and the cases that need a namespace are skipped")
	}
	next, closeNext, err := dial(defaultAdapter, urls, tlsFiles{}, 0, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeNext)

	for _, tc := range []struct {
		name    string
		noPIDNS bool // --pid-namespace=false
		act     func(t *testing.T, dlm, guard int)
		code    int // dlm's exit, -1 when it was killed
	}{
		{"SIGKILL of dlm", false, func(t *testing.T, dlm, _ int) { kill(t, dlm, syscall.SIGKILL) }, -1},
		{"SIGKILL of the guard", false, func(t *testing.T, _, guard int) { kill(t, guard, syscall.SIGKILL) }, 128 + 9},
		{"SIGKILL of the guard's sentinel", false, func(t *testing.T, dlm, _ int) { kill(t, childrenOf(dlm)[0], syscall.SIGKILL) }, 128 + 9},
		{"SIGKILL of both", false, func(t *testing.T, dlm, guard int) {
			kill(t, dlm, syscall.SIGKILL)
			kill(t, guard, syscall.SIGKILL)
		}, -1},
		{"SIGSTOP of dlm", false, func(t *testing.T, dlm, _ int) { kill(t, dlm, syscall.SIGSTOP) }, exitLockLost},
		{"SIGKILL of dlm, subreaper", true, func(t *testing.T, dlm, _ int) { kill(t, dlm, syscall.SIGKILL) }, -1},
		{"SIGSTOP of dlm, subreaper", true, func(t *testing.T, dlm, _ int) { kill(t, dlm, syscall.SIGSTOP) }, exitLockLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inNS := pidns && !tc.noPIDNS
			if (strings.Contains(tc.name, "both") || strings.Contains(tc.name, "sentinel")) && !inNS {
				t.Skip("without a PID namespace nothing is left to kill the command's children when dlm and its guard die together (docs/operations.md)")
			}
			mark := filepath.Join(t.TempDir(), "ready")
			// A grandchild in the group, and one in a session of its own
			// when the namespace holds it.
			script := `export DLM_TEST_FAMILY="$1"; sleep 27 & sleep 26 & touch "$1"; wait`
			want := 3
			if inNS {
				script = `export DLM_TEST_FAMILY="$1"; sleep 27 & setsid sleep 26 & touch "$1"; wait`
			}
			args := []string{"lock", "--nodes", strings.Join(urls, ","), "--ttl", ttl.String(), "--node-timeout", nodeTimeout.String()}
			if tc.noPIDNS {
				args = append(args, "--pid-namespace=false")
			}
			cmd, _, stderr := dlmCmd(t, nil, append(args, "res", "--", "sh", "-c", script, "sh", mark)...)
			done := startReaped(t, cmd)
			fam, guard := startedFamily(t, cmd.Process.Pid, mark, want, stderr)
			tc.act(t, cmd.Process.Pid, guard)

			// The next holder gets the lock once the first one's keys
			// expire (or dlm released them): nothing of the first command
			// may run from then on.
			var l *redlock.Lock
			redlocktest.Eventually(t, 60*time.Second, func() bool {
				l, err = next.TryLock(t.Context(), "res")
				return err == nil
			}, "the next holder never got the lock: %v", err)
			var left []int
			for _, p := range fam {
				if alive(p) {
					left = append(left, p)
				}
			}
			if len(left) > 0 {
				t.Errorf("processes %v of the first command run while the next holder holds the lock", left)
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Errorf("unlock: %v", err)
			}
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
			werr := waitExit(t, cmd, done, 20*time.Second, "dlm did not end; stderr: %s", stderr)
			if code := exitOf(werr); tc.code >= 0 && code != tc.code {
				t.Errorf("dlm exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
		})
	}
}

// startedFamily waits until the command of dlm (pid dlm), marked by mark,
// runs its want processes, has them killed when the test ends, and
// returns them with dlm's one guard (under its sentinel, in a PID
// namespace).
func startedFamily(t *testing.T, dlm int, mark string, want int, stderr *syncBuf) (fam []int, guard int) {
	t.Helper()
	redlocktest.Eventually(t, 20*time.Second, func() bool {
		fam = familyOf(mark)
		return fileExists(mark) && len(fam) == want
	}, "the command never started its %d processes (found %v); stderr: %s", want, fam, stderr)
	t.Cleanup(func() {
		for _, p := range fam {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	guards := childrenOf(dlm)
	if len(guards) != 1 {
		t.Fatalf("dlm has children %v, want its one guard (or the guard's sentinel)", guards)
	}
	if procs := dlmProcesses(dlm); len(procs) == 3 { // dlm, the sentinel, the guard
		return fam, procs[2]
	}
	return fam, guards[0]
}

// kill sends sig to pid.
func kill(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
}

// dlmProcesses returns dlm (pid dlm) and every process under it that runs
// the dlm binary (its guard, and the guard's parent outside the PID
// namespace where there is one): what `pkill -STOP dlm` stops.
func dlmProcesses(dlm int) []int {
	comm := func(pid int) string {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return strings.TrimSpace(string(b))
	}
	name := comm(dlm)
	procs := []int{dlm}
	for i := 0; i < len(procs); i++ {
		for _, k := range childrenOf(procs[i]) {
			if comm(k) == name {
				procs = append(procs, k)
			}
		}
	}
	return procs
}

// TestLockStoppedWithItsGuard: dlm and its guard stopped together past
// the lock's validity, as `pkill -STOP dlm` does (it stops every process
// of the dlm binary: dlm, the guard, and the guard's parent outside its
// PID namespace), with and without a PID namespace. The kernel ends the
// command at the validity's end, so that nothing of it runs once the next
// holder has the lock, and dlm, continued, exits 74. Before the fix the
// stopped guard kept the command running until dlm was continued: without
// a namespace until the guard got its kernel timer; in a namespace, where
// the kernel drops the signals of its first process's own timer, until the
// guard got a parent outside it whose timer ends it.
func TestLockStoppedWithItsGuard(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel timers are Linux only")
	}
	const ttl, nodeTimeout = 3 * time.Second, time.Second
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
			c := redlocktest.Start(t, 3) // its own nodes, for the next holder
			urls := c.URLs()
			next, closeNext, err := dial(defaultAdapter, urls, tlsFiles{}, 0, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(closeNext)
			mark := filepath.Join(t.TempDir(), "ready")
			// Without a namespace, one process: the kernel kills the
			// guard and, by its parent-death signal, the command's first
			// process; in one, a grandchild in a session of its own too.
			script, want := `export DLM_TEST_FAMILY="$1"; touch "$1"; exec sleep 27`, 1
			args := []string{"lock", "--nodes", strings.Join(urls, ","), "--ttl", ttl.String(), "--node-timeout", nodeTimeout.String()}
			if tc.noPIDNS {
				args = append(args, "--pid-namespace=false")
			} else {
				script, want = `export DLM_TEST_FAMILY="$1"; setsid sleep 26 & touch "$1"; exec sleep 27`, 2
			}
			cmd, _, stderr := dlmCmd(t, nil, append(args, "res", "--", "sh", "-c", script, "sh", mark)...)
			done := startReaped(t, cmd)
			fam, _ := startedFamily(t, cmd.Process.Pid, mark, want, stderr)
			stopped := dlmProcesses(cmd.Process.Pid)
			t.Cleanup(func() {
				for _, p := range stopped {
					_ = syscall.Kill(p, syscall.SIGCONT)
				}
			})
			for _, p := range stopped {
				kill(t, p, syscall.SIGSTOP)
			}

			var l *redlock.Lock
			redlocktest.Eventually(t, 60*time.Second, func() bool {
				l, err = next.TryLock(t.Context(), "res")
				return err == nil
			}, "the next holder never got the lock: %v", err)
			for _, p := range fam {
				// A process with SIGKILL pending never runs another
				// instruction of its own: on a loaded machine it may
				// not yet have been scheduled to exit.
				switch {
				case !alive(p):
				case killPending(p):
					t.Logf("process %d of the first command is killed, not yet ended: %s", p, procStatus(p))
				default:
					var st []string
					for _, d := range stopped {
						st = append(st, procStatus(d))
					}
					t0 := time.Now()
					for alive(p) && !killPending(p) && time.Since(t0) < 5*time.Second {
						time.Sleep(time.Millisecond)
					}
					t.Errorf("process %d of the first command runs while the next holder holds the lock (dlm processes %v stopped): %s; dlm processes: %v; killed %v later", p, stopped, procStatus(p), st, time.Since(t0))
				}
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Errorf("unlock: %v", err)
			}
			for _, p := range stopped {
				_ = syscall.Kill(p, syscall.SIGCONT)
			}
			werr := waitExit(t, cmd, done, 20*time.Second, "dlm did not end; stderr: %s", stderr)
			if code := exitOf(werr); code != exitLockLost {
				t.Errorf("dlm exit %d, want %d; stderr: %s", code, exitLockLost, stderr)
			}
			if !strings.Contains(stderr.String(), "validity") {
				t.Errorf("dlm does not say the lock's validity ended; stderr: %s", stderr)
			}
		})
	}
}

// killPending reports whether pid has SIGKILL pending, for the process
// or its thread (ShdPnd, SigPnd of /proc/PID/status): it is then ended
// and runs no code of its own again, even before it is scheduled to exit.
func killPending(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return true // gone
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "ShdPnd" && k != "SigPnd" {
			continue
		}
		if m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && m&(1<<(uint(syscall.SIGKILL)-1)) != 0 {
			return true
		}
	}
	return false
}

// procStatus returns the state and pending signals of pid, for a failure
// message.
func procStatus(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, k := range []string{"Name:", "State:", "PPid:", "NSpid:", "ShdPnd:", "SigPnd:"} {
			if strings.HasPrefix(line, k) {
				out = append(out, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	return strings.Join(out, "; ")
}
