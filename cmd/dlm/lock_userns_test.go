package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// TestUnprivilegedCommandDiesWithDLMAndGuard is issue 24 item 2 for a
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
	// Does the kernel give this user a user namespace that owns a PID
	// namespace? Asked of the kernel with unshare(1), not of dlm.
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1) to ask the kernel whether it allows unprivileged user namespaces")
	}
	if out, err := asUnprivileged(t, "unshare", "--user", "--pid", "--fork", "true").CombinedOutput(); err != nil {
		t.Skipf("the kernel refuses an unprivileged user namespace here (%v: %s): dlm lock runs the guard as subreaper (docs/operations.md)", err, out)
	}
	bin := unprivilegedBin(t)
	run := func(args ...string) (*exec.Cmd, *syncBuf, *syncBuf) {
		cmd := asUnprivileged(t, append([]string{bin, "lock", "--nodes", nodes, "--ttl", "2s", "--node-timeout", "200ms"}, args...)...)
		var stdout, stderr syncBuf
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 10 * time.Second
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd, &stdout, &stderr
	}

	// Which namespaces did the command get? Detected, not guessed.
	// Also: the command has no capability (in the user namespace, the
	// first process gets every one until it execs as a non-root uid).
	probe, out, errb := run("probe", "--", "sh", "-c",
		`readlink /proc/self/ns/pid /proc/self/ns/user; id -u; grep CapEff /proc/self/status | cut -f2`)
	if err := probe.Run(); err != nil {
		t.Fatalf("dlm lock as an unprivileged user: %v; stderr: %s", err, errb)
	}
	lines := strings.Fields(out.String())
	ourPID, _ := os.Readlink("/proc/self/ns/pid")
	if len(lines) != 4 {
		t.Fatalf("the probe printed %q, want two namespaces, a uid and the capabilities", out)
	}
	if lines[3] != "0000000000000000" {
		t.Errorf("the command runs with capabilities %s, want none", lines[3])
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
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	fam, guard := startedFamily(t, cmd.Process.Pid, mark, 3, stderr)
	kill(t, cmd.Process.Pid, syscall.SIGKILL)
	kill(t, guard, syscall.SIGKILL)
	redlocktest.Eventually(t, 10*time.Second, func() bool { return allGone(fam) },
		"processes of the command still run after dlm and its guard were killed together: %v", fam)
}

// TestCommandFindsItselfInItsNamespace: a command in the guard's PID
// namespace should see a /proc of that namespace, so that ps and pgrep
// find it. It sees the system's /proc, where its namespace pid is another
// process or none: `ps -p $$` says "fatal library error, lookup self"
// (or names a kernel thread). A finding, not fixed: the guard could mount
// the namespace's own /proc in a mount namespace of its own (as root; in a
// user namespace it needs CAP_SYS_ADMIN kept across exec as an ambient
// capability, dropped before it starts the command); tried, it works, but
// checker/torture's process-holders scenario reads the command's system
// pid from /proc/self/stat inside the command, which that /proc would
// give as the namespace's pid (TestTortureProcessHolders then fails).
func TestCommandFindsItselfInItsNamespace(t *testing.T) {
	t.Skip("finding: the command in the guard's PID namespace sees the system's /proc, so ps and pgrep fail inside (docs/operations.md, Signals); --pid-namespace=false avoids it")
	if !canPIDNamespace() {
		t.Skip("no PID namespace for this process: the command sees the system's /proc with the system's pids")
	}
	if _, err := exec.LookPath("ps"); err != nil {
		t.Skip("no ps")
	}
	c := redlocktest.Start(t, 3)
	r := runDLM(t, 30*time.Second, nil, "lock", "--nodes", strings.Join(c.URLs(), ","), "self", "--", "sh", "-c", "ps -o comm= -p $$")
	if got := strings.TrimSpace(r.stdout); r.code != 0 || got != "sh" {
		t.Errorf("ps -p $$ in the command: exit %d, printed %q, want sh; stderr: %s", r.code, got, r.stderr)
	}
}
