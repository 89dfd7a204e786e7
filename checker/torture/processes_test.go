package torture

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMarkedProcesses: the killer of the process-holders scenario finds
// the processes of a section's command by its mark (the shell by its last
// argument, what the shell started by its environment), never a process
// that only carries the mark among other arguments (dlm lock and its
// guard carry the command's), and sees them gone once killed.
func TestMarkedProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	mark, ready := filepath.Join(dir, "sections")+"#p0-0", filepath.Join(dir, "ready")
	start := func(argv0 string, args ...string) *exec.Cmd {
		c := exec.Command("sh")
		c.Args = append([]string{argv0}, args...)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		})
		return c
	}
	cmd := start("sh", "-c", `export `+sectionEnv+`="$2"; touch "$1"; sleep 30; :`, "sh", ready, mark)
	other := start("dlm", "-c", `sleep 30; :`, "dlm", mark)
	marked := func() []int {
		var pids []int
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			// Wait for the shell and its sleep: the touch before it
			// carries the mark too until it exits, and a child between
			// fork and exec carries the shell's arguments.
			if pids = markedProcesses(mark); len(pids) == 2 && runsSleep(pids) {
				if _, err := os.Stat(ready); err == nil {
					break
				}
			}
		}
		return pids
	}
	pids := marked()
	if len(pids) != 2 || !slices.Contains(pids, cmd.Process.Pid) || slices.Contains(pids, other.Process.Pid) {
		t.Fatalf("marked processes %v, want the shell %d and its sleep, not %d", pids, cmd.Process.Pid, other.Process.Pid)
	}
	if got := stillMarked(append(pids, other.Process.Pid), mark); !slices.Equal(got, pids) {
		t.Errorf("stillMarked: %v, want %v", got, pids)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for deadline := time.Now().Add(20 * time.Second); len(pids) > 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		pids = markedProcesses(mark)
	}
	if len(pids) > 0 {
		t.Errorf("processes %v still marked after the group was killed", pids)
	}
}

// runsSleep reports whether one of pids runs sleep(1).
func runsSleep(pids []int) bool {
	for _, p := range pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); err == nil && strings.HasPrefix(string(b), "sleep\x00") {
			return true
		}
	}
	return false
}
