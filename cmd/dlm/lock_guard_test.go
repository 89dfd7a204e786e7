package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
			if left := stillRunning(fam); len(left) > 0 {
				t.Errorf("processes of the first command run while the next holder holds the lock: %v", left)
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
	t0 := time.Now()
	// Waited for until the command runs or dlm ends: a dlm that ended
	// first (an acquisition or a start that failed) said why on stderr,
	// and waiting on would only hide that behind the bound.
	started, ended := false, false
	redlocktest.Eventually(t, 20*time.Second, func() bool {
		fam = familyOf(mark)
		started = fileExists(mark) && len(fam) == want
		ended = !alive(dlm)
		return started || ended
	}, "the command never started its %d processes (found %v, mark written %v); dlm processes %v: %v; stderr: %s",
		want, redlocktest.Later(func() any { return fam }), redlocktest.Later(func() any { return fileExists(mark) }),
		redlocktest.Later(func() any { return dlmProcesses(dlm) }),
		redlocktest.Later(func() any { return statusOf(dlmProcesses(dlm)) }), stderr)
	if !started {
		t.Fatalf("dlm ended before its command ran its %d processes (found %v); stderr: %s", want, fam, stderr)
	}
	t.Logf("the command ran its %d processes %v after the test started waiting", want, time.Since(t0).Round(time.Millisecond))
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

// statusOf returns procStatus of each of pids, for a failure message.
func statusOf(pids []int) []string {
	var out []string
	for _, p := range pids {
		out = append(out, procStatus(p))
	}
	return out
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

// ended reports whether pid runs no more code of its own: gone, a
// zombie, exiting, or with SIGKILL pending (the kernel ends it when it is
// next scheduled; on a loaded machine that can take a while, but it never
// returns to the command's code). The guard's promise is about this: the
// command is killed before the lock's validity ends, whatever the load,
// and not also reaped.
func ended(pid int) bool {
	if !alive(pid) || killPending(pid) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) STATE PPID PGRP SESSION TTY TPGID FLAGS ...: the flags
	// are the seventh field after the last ')'. PF_EXITING and
	// PF_SIGNALED: it has taken its fatal signal and is on its way out.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 7 {
		return true
	}
	flags, _ := strconv.ParseUint(f[6], 10, 64)
	const pfExiting, pfSignaled = 0x4, 0x400
	return flags&(pfExiting|pfSignaled) != 0
}

// stillRunning returns those of pids that run code of their own (not
// ended), each with its state for a failure message.
func stillRunning(pids []int) []string {
	var left []string
	for _, p := range pids {
		if !ended(p) {
			left = append(left, strconv.Itoa(p)+" ("+procStatus(p)+")")
		}
	}
	return left
}

// deathWatch records when each of a few processes was first seen ended
// (polling every millisecond), so that a test can say how long before
// or after an event the kill came.
type deathWatch struct {
	pids []int
	seen []atomic.Int64 // UnixNano when pids[i] was first seen ended, 0 before
	stop chan struct{}
	done chan struct{}
}

// watchDeaths starts watching pids until the test ends: when each is
// first seen over (ended).
func watchDeaths(t *testing.T, pids []int, over func(int) bool) *deathWatch {
	w := &deathWatch{pids: pids, seen: make([]atomic.Int64, len(pids)), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			all := true
			for i, p := range pids {
				if w.seen[i].Load() == 0 {
					if over(p) {
						w.seen[i].Store(time.Now().UnixNano())
					} else {
						all = false
					}
				}
			}
			if all {
				return
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(w.stop); <-w.done })
	return w
}

// before says, for a log line, how long before at each process was seen
// ended (negative: after it, or not yet).
func (w *deathWatch) before(at time.Time) string {
	var out []string
	for i, p := range w.pids {
		if ns := w.seen[i].Load(); ns != 0 {
			out = append(out, fmt.Sprintf("%d: %v", p, at.Sub(time.Unix(0, ns)).Round(time.Millisecond)))
		} else {
			out = append(out, fmt.Sprintf("%d: not yet", p))
		}
	}
	return strings.Join(out, ", ")
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

// niceOf returns the nice value of every thread of pid.
func niceOf(pid int) []int {
	var out []int
	dir, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, e := range dir {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) STATE ...: nice is the 19th field, the 17th after ')'.
		s := string(b)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 16 {
			n, _ := strconv.Atoi(f[16])
			out = append(out, n)
		}
	}
	return out
}

// TestLockGuardIsFavouredTheCommandIsNot: the guard and its sentinel,
// whose wake-up and exit are the command's kill at the end of the lock's
// validity, run at the most favoured nice value where the kernel allows it
// (root, say), and the command at dlm's own. Before, both ran at dlm's:
// on a loaded machine the kill waited for a CPU behind the load
// (TestLockJobControl at load 21-28: "process 9087 of the stopped
// command runs while the next holder holds the lock"). This test failed
// before with "the guard's threads run at nice [7 7 7 7 7 7 7 7], want -20".
func TestLockGuardIsFavouredTheCommandIsNot(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("nice values per thread are Linux's")
	}
	nice, err := exec.LookPath("nice")
	if err != nil {
		t.Skip("nice(1) not installed")
	}
	t.Parallel()
	c := redlocktest.Start(t, 3)
	// Whether the kernel lets this user take nice -20 (root,
	// CAP_SYS_NICE, RLIMIT_NICE): nice(1) says the value it got.
	out, _ := exec.Command(nice, "-n", "-20", nice).Output()
	favoured := strings.TrimSpace(string(out)) == "-20"
	for _, tc := range []struct {
		name    string
		noPIDNS bool
	}{
		{"namespace", false},
		{"subreaper", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.noPIDNS && !canPIDNamespace() {
				t.Skip("no PID namespace for this process")
			}
			mark := filepath.Join(t.TempDir(), "ready")
			args := []string{"lock", "--nodes", strings.Join(c.URLs(), ","), "--ttl", "30s", "--node-timeout", "1s"}
			if tc.noPIDNS {
				args = append(args, "--pid-namespace=false")
			}
			cmd, _, stderr := dlmCmd(t, nil, append(args, "res", "--", "sh", "-c",
				`export DLM_TEST_FAMILY="$1"; nice > "$1.nice"; touch "$1"; exec sleep 27`, "sh", mark)...)
			cmd.Args = append([]string{"nice", "-n", "7"}, cmd.Args...)
			cmd.Path = nice
			done := startReaped(t, cmd)
			startedFamily(t, cmd.Process.Pid, mark, 1, stderr)
			procs := dlmProcesses(cmd.Process.Pid) // dlm, then the guard (or the sentinel, then the guard)
			if b, err := os.ReadFile(mark + ".nice"); err != nil || strings.TrimSpace(string(b)) != "7" {
				t.Errorf("the command runs at nice %q (%v), want dlm's 7", b, err)
			}
			want := 7
			if favoured {
				want = killerNice
			}
			for i, p := range procs {
				what, w := "the guard's", want
				switch {
				case i == 0:
					what, w = "dlm's", 7
				case i == 1 && len(procs) == 3:
					what = "the sentinel's"
				}
				if got := niceOf(p); len(got) == 0 || slices.ContainsFunc(got, func(n int) bool { return n != w }) {
					t.Errorf("%s threads run at nice %v, want %d", what, got, w)
				}
			}
			kill(t, cmd.Process.Pid, syscall.SIGTERM)
			waitExit(t, cmd, done, 30*time.Second, "dlm did not end; stderr: %s", stderr)
		})
	}
}
