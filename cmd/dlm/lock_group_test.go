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

// familyScript is a command with grandchildren: it starts two sleeps in
// the background, then creates "$1" and waits. Its processes carry "$1"
// (the shell in its arguments, the sleeps in their environment), which is
// how familyOf finds them: their pids as the command sees them would not
// do, in the PID namespace of the guard (lock_guard.go).
const familyScript = `export DLM_TEST_FAMILY="$1"; sleep 27 & sleep 26 & touch "$1"; wait`

// readPids waits until familyScript has created path and returns the pids
// (as this test sees them) of its three processes.
func readPids(t *testing.T, path string, stderr *syncBuf) []int {
	t.Helper()
	var pids []int
	redlocktest.Eventually(t, 20*time.Second, func() bool {
		if !fileExists(path) {
			return false
		}
		pids = familyOf(path)
		return len(pids) == 3
	}, "the command never started its family (%v); stderr: %s", pids, stderr)
	return pids
}

// familyOf returns the pids of the processes that carry mark in their
// arguments or their environment, dlm and its guard excepted (they carry
// the command's arguments).
func familyOf(mark string) []int {
	var pids []int
	dir, _ := os.ReadDir("/proc")
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		p := "/proc/" + e.Name() + "/"
		if comm, _ := os.ReadFile(p + "comm"); strings.TrimSpace(string(comm)) == "dlm" {
			continue
		}
		args, _ := os.ReadFile(p + "cmdline")
		env, _ := os.ReadFile(p + "environ")
		if strings.Contains(string(args), mark) || strings.Contains(string(env), "DLM_TEST_FAMILY="+mark+"\x00") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid is a running process (a zombie counts as gone:
// it runs nothing, it only waits to be reaped).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// allGone reports whether none of pids runs any more: each is gone, a
// zombie, or killed (ended).
func allGone(pids []int) bool {
	for _, p := range pids {
		if !ended(p) {
			return false
		}
	}
	return true
}

// TestLockSIGKILLTakesTheFamily: when dlm lock (or dlm elect) itself is
// killed with SIGKILL, its command and the command's children are gone
// well before the lock can expire, so no second holder (or leader) can
// run beside them.
func TestLockSIGKILLTakesTheFamily(t *testing.T) {
	c := redlocktest.Start(t, 3)
	const ttl = 8 * time.Second
	nodes := []string{"--nodes", strings.Join(c.URLs(), ","), "--ttl", ttl.String(), "--node-timeout", "1s"}
	for _, tc := range []struct{ name, cmd, res string }{
		{"lock", "lock", "res"},
		{"elect", "elect", "db --id a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			args := append(append([]string{tc.cmd}, nodes...), strings.Fields(tc.res)...)
			args = append(args, "--", "sh", "-c", familyScript, "sh", pidFile)
			cmd, _, stderr := dlmCmd(t, nil, args...)
			done := startReaped(t, cmd)
			pids := readPids(t, pidFile, stderr)
			t.Cleanup(func() {
				for _, p := range pids {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			})
			killed := time.Now()
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			for !allGone(pids) {
				if time.Since(killed) > ttl/2 {
					var left []int
					for _, p := range pids {
						if !ended(p) {
							left = append(left, p)
						}
					}
					t.Fatalf("%v after dlm %s was killed, processes %v of its command still run (the lock expires after %v)", time.Since(killed).Round(time.Millisecond), tc.cmd, left, ttl)
				}
				time.Sleep(20 * time.Millisecond) // polling interval, bounded by the deadline above
			}
			t.Logf("the command and its children were gone %v after dlm %s was killed (ttl %v)", time.Since(killed).Round(time.Millisecond), tc.cmd, ttl)
			<-done
		})
	}
}

// TestLockLostStopsTheFamily: on a lost lock, the command's children are
// stopped too, not only the command.
func TestLockLostStopsTheFamily(t *testing.T) {
	c := redlocktest.Start(t, 3)
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd, _, stderr := dlmCmd(t, nil, "lock", "--nodes", strings.Join(c.URLs(), ","), "--ttl", "3s", "--node-timeout", "1s", "--grace", "2s",
		"res", "--", "sh", "-c", familyScript, "sh", pidFile)
	done := startReaped(t, cmd)
	pids := readPids(t, pidFile, stderr)
	t.Cleanup(func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	// A majority: on a loaded machine the third node's request can miss
	// the node timeout, and its key then never comes. Should it land after
	// the deletion below, one node of three holds the lock: still lost.
	redlocktest.Eventually(t, 60*time.Second, func() bool { return len(keysOn(c)) >= 2 }, "the lock key never reached 2 of the 3 nodes")
	for _, s := range c.Servers {
		for _, k := range s.MustKeys("") {
			_ = s.Client().Del(t.Context(), k).Err()
		}
	}
	err := waitExit(t, cmd, done, 30*time.Second, "dlm lock did not end after its keys were deleted; stderr: %s", stderr)
	if code := exitOf(err); code != exitLockLost {
		t.Errorf("exit %d, want %d; stderr: %s", code, exitLockLost, stderr)
	}
	redlocktest.Eventually(t, 30*time.Second, func() bool { return allGone(pids) },
		"dlm exited %d after the lock was lost, yet processes of its command still run: %v", exitOf(err), pids)
	if n := strings.Count(stderr.String(), "lost while the command ran"); n != 1 {
		t.Errorf("the lock-lost reason is printed %d times, want once:\n%s", n, stderr)
	}
}

// TestLockInterruptOnce: a terminal's Ctrl-C sends SIGINT to dlm's whole
// process group; the command must get it once, not once from the terminal
// and once more forwarded by dlm.
func TestLockInterruptOnce(t *testing.T) {
	c := redlocktest.Start(t, 3)
	dir := t.TempDir()
	ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
	script := `trap 'echo INT >> "$2"' INT; touch "$1"; while [ ! -s "$2" ]; do sleep 0.05; done; sleep 1; exit 4`
	cmd, _, stderr := dlmCmd(t, nil, "lock", "--nodes", strings.Join(c.URLs(), ","), "--node-timeout", "1s", "res", "--", "sh", "-c", script, "sh", ready, got)
	cmd.SysProcAttr.Setpgid = true // dlm leads its own group, as a shell's foreground job does
	done := startReaped(t, cmd)
	redlocktest.Eventually(t, 20*time.Second, func() bool { return fileExists(ready) }, "the command never ran; stderr: %s", stderr)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil { // what the terminal does on Ctrl-C
		t.Fatal(err)
	}
	err := waitExit(t, cmd, done, 30*time.Second, "dlm lock did not end; stderr: %s", stderr)
	if code := exitOf(err); code != 4 {
		t.Errorf("exit %d, want the command's 4; stderr: %s", code, stderr)
	}
	b, _ := os.ReadFile(got)
	if n := strings.Count(string(b), "INT"); n != 1 {
		t.Errorf("the command got SIGINT %d times, want once", n)
	}
}
