//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"dlm/redlock/redlocktest"
)

// openPTY opens a pseudo-terminal pair: the master, which the test reads,
// and the slave, which the process under test gets as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open pty slave: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// TestNoTerminalQuery: dlm on a terminal that never answers (a CI runner's
// pty, docker run -t, ssh -tt) writes no escape sequence and does not wait
// for an answer, in any subcommand but the demo, nor in the guard that
// dlm lock runs its command under: what it prints is exactly its output.
// Failed before: bubbletea's package init asked every dlm process for the
// terminal's background colour ("\x1b]11;?\x07" written to the terminal)
// and waited up to 5 s for an answer.
func TestNoTerminalQuery(t *testing.T) {
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	for _, tc := range []struct {
		name string
		args []string
		want string // in the output
	}{
		{"help", []string{"help"}, "Exit codes"},
		{"status", []string{"status", "--nodes", nodes, "res"}, "res"},
		{"lock", []string{"lock", "--nodes", nodes, "--ttl", "3s", "res", "--", "echo", "ran under the lock"}, "ran under the lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runOnPTY(t, tc.args...)
			if code := exitOf(err); code != 0 {
				t.Errorf("exit %d, want 0; output: %q", code, got)
			}
			if i := bytes.IndexByte(got, 0x1b); i >= 0 {
				t.Errorf("dlm %s wrote an escape sequence to the terminal at byte %d: %q", tc.name, i, got[i:min(len(got), i+16)])
			}
			if !bytes.Contains(got, []byte(tc.want)) {
				t.Errorf("output %q does not hold %q", got, tc.want)
			}
		})
	}
}

// runOnPTY runs dlm with args on a new pseudo-terminal, as its controlling
// terminal, and returns what it wrote there and its Wait error.
func runOnPTY(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	master, slave := openPTY(t)
	cmd := exec.Command(dlmBin(), args...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLORTERM=truecolor")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	out := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, master) // EIO once the last slave closes
		out <- b.Bytes()
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("dlm %q did not finish within 90s on a terminal that never answers", args)
	}
	_ = master.SetReadDeadline(time.Now().Add(10 * time.Second))
	return <-out, err
}

// TestDemoLiveViewOnPTY: dlm demo draws its live view on a terminal (the
// one subcommand that may write escape sequences), without asking the
// terminal anything, and ends with its summary.
func TestDemoLiveViewOnPTY(t *testing.T) {
	got, err := runOnPTY(t, "demo", "--duration", "3s", "--workers", "2")
	if code := exitOf(err); code != 0 {
		t.Fatalf("exit %d, want 0; output: %q", code, got)
	}
	for _, want := range []string{"NODES", "WORKERS", "LOCK"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the live view lacks %q: %q", want, got)
		}
	}
	for _, query := range []string{"\x1b]11;?", "\x1b[6n", "\x1b[c"} {
		if bytes.Contains(got, []byte(query)) {
			t.Errorf("dlm demo queried the terminal (%q)", query)
		}
	}
}
