package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// asUnprivileged returns a command that runs argv as an unprivileged
// user: as is when the tests run as one, else as nobody (setpriv). It
// skips the test when neither is possible.
func asUnprivileged(t *testing.T, argv ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		return exec.Command(argv[0], argv[1:]...)
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("running as root without setpriv: no way to run dlm as an unprivileged user")
	}
	return exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)...)
}

// unprivilegedBin returns a copy of the dlm binary that nobody may
// execute (the build's directory is private to the tests' user).
func unprivilegedBin(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return dlmBin()
	}
	dir, err := os.MkdirTemp("", "dlm-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dlm")
	copyFile(t, dlmBin(), bin, 0o755)
	return bin
}

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestUnprivilegedCommandDiesWithDLMAndGuard is the same for a
// user without privileges: `pkill -9 dlm` kills dlm and its guard
// together, and nothing of the command may survive them, not even a
// process in a session of its own (setsid). As root, the guard is the
// first process of a PID namespace, which the kernel empties when it dies;
// any other user gets the same through an unprivileged user namespace
// (mapping only the user's own ids) where the kernel allows it. Before,
// such a user got the subreaper mode, which dies with the guard: the
// sleeps ran on, reparented to init. The test skips when the kernel
// refuses the user namespace (dlm then falls back to the subreaper, as
// docs/operations.md says). Before: "the command runs in the system's PID
// namespace", and both sleeps ran on.
func TestUnprivilegedCommandDiesWithDLMAndGuard(t *testing.T) {
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	dir, err := os.MkdirTemp("", "dlm-userns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil { // the user may be nobody
		t.Fatal(err)
	}
	requireUserNamespace(t)
	bin := unprivilegedBin(t)
	run := func(args ...string) (*exec.Cmd, *syncBuf, *syncBuf) {
		cmd := asUnprivileged(t, append([]string{bin, "lock", "--nodes", nodes, "--ttl", "3s", "--node-timeout", "1s"}, args...)...)
		var stdout, stderr syncBuf
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 10 * time.Second
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd, &stdout, &stderr
	}

	// Which namespaces did the command get? Detected, not guessed.
	// Also: the command has no capability (in the user namespace, the
	// first process gets every one until it execs as a non-root uid, and
	// the guard keeps CAP_SYS_ADMIN for the namespace's /proc).
	probe, out, errb := run("probe", "--", "sh", "-c",
		`readlink /proc/self/ns/pid /proc/self/ns/user; id -u; grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status | cut -f2 | tr -d '\n'`)
	if err := probe.Run(); err != nil {
		t.Fatalf("dlm lock as an unprivileged user: %v; stderr: %s", err, errb)
	}
	lines := strings.Fields(out.String())
	ourPID, _ := os.Readlink("/proc/self/ns/pid")
	if len(lines) != 4 {
		t.Fatalf("the probe printed %q, want two namespaces, a uid and the capabilities", out)
	}
	if lines[3] != strings.Repeat("0", 4*16) {
		t.Errorf("the command runs with capabilities %s (inheritable, permitted, effective, ambient), want none", lines[3])
	}

	if lines[0] == ourPID {
		t.Errorf("the command runs in the system's PID namespace (%s), although the kernel allows this user one", lines[0])
	}
	if want := "0"; os.Geteuid() == 0 && lines[2] == want {
		t.Errorf("the command runs as uid 0 inside; want the unprivileged user's own uid")
	}

	mark := filepath.Join(dir, "ready")
	script := `export DLM_TEST_FAMILY="$1"; sleep 27 & setsid sleep 26 & touch "$1"; wait`
	cmd, _, stderr := run("res", "--", "sh", "-c", script, "sh", mark)
	startReaped(t, cmd)
	fam, guard := startedFamily(t, cmd.Process.Pid, mark, 3, stderr)
	kill(t, cmd.Process.Pid, syscall.SIGKILL)
	kill(t, guard, syscall.SIGKILL)
	redlocktest.Eventually(t, 30*time.Second, func() bool { return allGone(fam) },
		"processes of the command still run after dlm and its guard were killed together: %v", fam)
}

// TestCommandFindsItselfInItsNamespace: a command in the guard's PID
// namespace sees a /proc of that namespace, so that ps and pgrep find it
// and its children by the pids it knows ($$, $!), as root and as an
// unprivileged user (in a user namespace), and it has no capability the
// user lacks. Before, it saw the system's /proc, where its namespace pid
// is another process or none: `ps -p $$` said "fatal library error,
// lookup self" (as nobody it named a kernel thread, "kworker/0:0H-kblockd").
func TestCommandFindsItselfInItsNamespace(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"ps", "pgrep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	// ps names the shell by $$; pgrep finds its one sleep, which is $!;
	// then the capabilities of the command.
	script := `sleep 30 & echo "$(ps -o comm= -p $$) $(pgrep -x sleep) $!"; kill $!; grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status | cut -f2`
	for _, tc := range []struct {
		name string
		cmd  func(t *testing.T) *exec.Cmd
	}{
		{"root", func(t *testing.T) *exec.Cmd {
			if os.Geteuid() != 0 || !canPIDNamespace() {
				t.Skip("not root with a PID namespace for this process")
			}
			return exec.Command(dlmBin())
		}},
		{"unprivileged", func(t *testing.T) *exec.Cmd {
			requireUserNamespace(t)
			return asUnprivileged(t, unprivilegedBin(t))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := tc.cmd(t)
			args := []string{"lock", "--nodes", nodes, "self", "--", "sh", "-c", script}
			cmd.Args = append(cmd.Args, args...)
			var stdout, stderr syncBuf
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = 10 * time.Second
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			r := finishDLM(t, cmd, &stdout, &stderr, 30*time.Second, args)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if r.code != 0 || len(lines) < 1 {
				t.Fatalf("exit %d, printed %q; stderr: %s", r.code, r.stdout, r.stderr)
			}
			f := strings.Fields(lines[0])
			if len(f) != 3 || f[0] != "sh" || f[1] != f[2] {
				t.Errorf("ps -p $$, pgrep -x sleep and $! in the command printed %q, want sh and the sleep's pid twice; stderr: %s", lines[0], r.stderr)
			}
			if tc.name == "root" {
				return // root's command keeps root's capabilities
			}
			if caps := lines[1:]; len(caps) != 4 || strings.Trim(strings.Join(caps, ""), "0") != "" {
				t.Errorf("the command's capabilities (inheritable, permitted, effective, ambient): %q, want none", caps)
			}
		})
	}
}

// TestNamespaceProcStaysInside: the /proc that the guard mounts for its
// PID namespace is seen in that namespace only, even where the system's
// mounts are shared (systemd makes / shared: a mount in a copy of it
// propagates back unless made private), and nothing of the command stays
// when dlm ends. dlm runs in a mount namespace of its own with every mount
// shared (unshare(1)), which stands for the system; the test reads that
// namespace's mounts while the command runs.
func TestNamespaceProcStaysInside(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 || !canPIDNamespace() {
		t.Skip("not root with a PID namespace for this process")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	c := redlocktest.Start(t, 3)
	mark := filepath.Join(t.TempDir(), "runs")
	args := []string{"--mount", "--propagation", "shared", dlmBin(), "lock", "--nodes", strings.Join(c.URLs(), ","), "r", "--",
		"sh", "-c", `export DLM_TEST_FAMILY="$1"; touch "$1"; exec sleep 60`, "sh", mark}
	cmd := exec.Command("unshare", args...)
	var stderr syncBuf
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := startReaped(t, cmd)
	var fam []int
	redlocktest.Eventually(t, 20*time.Second, func() bool {
		fam = familyOf(mark)
		return fileExists(mark) && len(fam) == 1
	}, "the command never ran (found %v); stderr: %s", fam, &stderr)
	// unshare execs dlm: its pid is dlm's, in the shared namespace.
	procMounts := func(pid int) (n int) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 4 && f[4] == "/proc" {
				n++
			}
		}
		return n
	}
	// dlm's mount namespace is a copy of this process's.
	if n, want := procMounts(cmd.Process.Pid), procMounts(os.Getpid()); n != want {
		t.Errorf("dlm's mount namespace has %d mounts on /proc while the command runs, want %d as before: the guard's /proc propagated out", n, want)
	}
	if n, want := procMounts(fam[0]), procMounts(os.Getpid())+1; n != want {
		t.Errorf("the command's mount namespace has %d mounts on /proc, want %d: the system's and its namespace's", n, want)
	}
	kill(t, cmd.Process.Pid, syscall.SIGTERM)
	waitExit(t, cmd, done, 20*time.Second, "dlm did not end after SIGTERM; stderr: %s", &stderr)
	redlocktest.Eventually(t, 10*time.Second, func() bool { return allGone(fam) && len(familyOf(mark)) == 0 },
		"the command still runs after dlm ended: %v", fam)
}

// requireUserNamespace skips the test unless the kernel gives the
// unprivileged user of asUnprivileged a user namespace that owns a PID
// namespace (dlm lock then runs its guard as subreaper). It asks the
// kernel with unshare(1), not dlm.
func requireUserNamespace(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1) to ask the kernel whether it allows unprivileged user namespaces")
	}
	if out, err := asUnprivileged(t, "unshare", "--user", "--pid", "--fork", "true").CombinedOutput(); err != nil {
		t.Skipf("the kernel refuses an unprivileged user namespace here (%v: %s): dlm lock runs the guard as subreaper (docs/operations.md)", err, out)
	}
}
