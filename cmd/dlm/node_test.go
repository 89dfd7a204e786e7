package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// nodeRun is one running dlm node process.
type nodeRun struct {
	t      *testing.T
	done   chan error
	stderr func() string
	signal func(os.Signal)
}

// startNode starts dlm node on port with the data directory dir.
func startNode(t *testing.T, port int, dir string, maxTTL time.Duration) *nodeRun {
	t.Helper()
	cmd, _, stderr := dlmCmd(t, nil, "node", "--port", strconv.Itoa(port), "--dir", dir, "--max-ttl", maxTTL.String(),
		"--", "--save", "", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &nodeRun{t: t, done: make(chan error, 1), stderr: stderr.String,
		signal: func(s os.Signal) { _ = cmd.Process.Signal(s) }}
	go func() { n.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return n
}

// wait waits for the dlm node process to exit and returns its exit code.
func (n *nodeRun) wait() int {
	n.t.Helper()
	select {
	case err := <-n.done:
		n.done <- err // for the cleanup
		return exitOf(err)
	case <-time.After(30 * time.Second):
		n.t.Fatalf("dlm node did not exit; log:\n%s", n.stderr())
	}
	return -1
}

// crashRedis kills the node's redis-server, whose pid its log gives.
func (n *nodeRun) crashRedis() {
	n.t.Helper()
	m := regexp.MustCompile(`redis-server pid (\d+)`).FindStringSubmatch(n.stderr())
	if m == nil {
		n.t.Fatalf("log does not give redis-server's pid:\n%s", n.stderr())
	}
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		n.t.Fatal(err)
	}
}

// pings reports whether the node on port answers PING.
func pings(port int) bool {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	return c.Ping(ctx).Err() == nil
}

// TestNode: after a clean stop dlm node starts redis-server at once; after
// an unclean one (redis-server killed) it waits --max-ttl first (R16.3).
func TestNode(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	port, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, nodeMarker)
	const maxTTL = 2 * time.Second

	// First start: no marker, no wait.
	n := startNode(t, port, dir, maxTTL)
	redlocktest.Eventually(t, 20*time.Second, func() bool { return pings(port) }, "dlm node never served; log:\n%s", n.stderr())
	if !fileExists(marker) {
		t.Errorf("no marker %s while the node runs", marker)
	}
	// Clean stop: SIGTERM is forwarded, redis-server exits 0, marker removed.
	n.signal(syscall.SIGTERM)
	if code := n.wait(); code != 0 {
		t.Fatalf("clean stop: exit %d, want 0; log:\n%s", code, n.stderr())
	}
	if fileExists(marker) {
		t.Fatalf("marker still there after a clean stop; log:\n%s", n.stderr())
	}

	// Start after a clean stop: no wait.
	n = startNode(t, port, dir, maxTTL)
	redlocktest.Eventually(t, 20*time.Second, func() bool { return pings(port) }, "dlm node never served; log:\n%s", n.stderr())
	if strings.Contains(n.stderr(), "waiting") {
		t.Errorf("dlm node waited after a clean stop; log:\n%s", n.stderr())
	}
	// Crash: kill redis-server itself.
	n.crashRedis()
	if code := n.wait(); code != 128+int(syscall.SIGKILL) {
		t.Errorf("crash: exit %d, want %d (redis-server's); log:\n%s", code, 128+int(syscall.SIGKILL), n.stderr())
	}
	if !fileExists(marker) {
		t.Fatalf("marker gone after a crash; log:\n%s", n.stderr())
	}

	// Start after the crash: waits --max-ttl before serving.
	start := time.Now()
	n = startNode(t, port, dir, maxTTL)
	redlocktest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(n.stderr(), "waiting --max-ttl") },
		"dlm node does not say it waits after a crash; log:\n%s", n.stderr())
	if pings(port) {
		t.Errorf("the node serves during the delayed-restart wait")
	}
	redlocktest.Eventually(t, 30*time.Second, func() bool { return pings(port) }, "dlm node never served after the wait; log:\n%s", n.stderr())
	if waited := time.Since(start); waited < maxTTL {
		t.Errorf("served %v after the start, before --max-ttl %v had passed", waited, maxTTL)
	}
	// The node records --max-ttl for dlm doctor.
	r := runDLM(t, 30*time.Second, nil, "doctor", "--nodes", "redis://127.0.0.1:"+strconv.Itoa(port))
	if !strings.Contains(r.stdout, "dlm node --max-ttl "+maxTTL.String()) {
		t.Errorf("doctor does not see the node's delayed restarts:\n%s", r.stdout)
	}
}

// TestNodePortInUse: dlm node on a port another server uses refuses before
// touching anything: no marker file, nothing written to that server, no
// "serving".
func TestNodePortInUse(t *testing.T) {
	t.Parallel()
	other := redlocktest.StartServer(t)
	dir := t.TempDir()
	r := runDLM(t, 30*time.Second, nil, "node", "--port", strconv.Itoa(other.Port()), "--dir", dir, "--max-ttl", "1s")
	if r.code != exitUsage {
		t.Errorf("exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
	}
	if !strings.Contains(r.stderr, "in use") || strings.Contains(r.stderr, "serving") {
		t.Errorf("stderr %q does not refuse the port in use (or says it serves)", r.stderr)
	}
	if n, err := other.Client().Exists(t.Context(), nodeMaxTTLKey).Result(); err != nil || n != 0 {
		t.Errorf("dlm node wrote %s into a server it did not start (exists %d, %v)", nodeMaxTTLKey, n, err)
	}
	if fileExists(filepath.Join(dir, nodeMarker)) {
		t.Errorf("marker written for a node that never ran")
	}
}

// TestNodeRequirePass: the node's password comes from a file
// (--requirepass-file) or from DLM_NODE_PASSWORD, never from argv: it is
// in neither dlm node's nor redis-server's command line (which every local
// user reads in ps), the node requires it, the node still learns that it
// persists (a clean stop removes the marker) and records --max-ttl with
// it; a --requirepass after -- is refused (64). Failed before: the flag
// and the variable did not exist, and -- --requirepass PW put the
// password in both command lines.
func TestNodeRequirePass(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	r := runDLM(t, 30*time.Second, nil, "node", "--port", "1", "--dir", t.TempDir(), "--", "--requirepass", "node-pw")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--requirepass-file") || strings.Contains(r.stderr, "node-pw") {
		t.Errorf("-- --requirepass: exit %d, want %d naming --requirepass-file (and not the password); stderr: %s", r.code, exitUsage, r.stderr)
	}
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("node-pw \"q\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		pw   string
	}{
		{"file", nil, []string{"--requirepass-file", pwFile}, `node-pw "q"`},
		{"environment", []string{"DLM_NODE_PASSWORD=env-pw,x:y"}, nil, "env-pw,x:y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Below the ephemeral range (freeRun): a port of that range
			// was taken by an outgoing connection before the node bound it.
			port := freeRun(t, 1)
			dir := t.TempDir()
			args := append([]string{"node", "--port", strconv.Itoa(port), "--dir", dir, "--max-ttl", "1s"}, tc.args...)
			cmd, _, stderr := dlmCmd(t, tc.env, append(args, "--", "--save", "", "--loglevel", "warning")...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			redlocktest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(stderr.String(), "serving") },
				"dlm node never served; log:\n%s", stderr)
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), Password: tc.pw})
			defer c.Close()
			if v, err := c.Get(t.Context(), nodeMaxTTLKey).Result(); err != nil || v != "1s" {
				t.Errorf("%s = %q, %v; want 1s", nodeMaxTTLKey, v, err)
			}
			anon := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
			defer anon.Close()
			if err := anon.Ping(t.Context()).Err(); err == nil {
				t.Errorf("the node answers without its password")
			}
			// Every process's command line: dlm node's and redis-server's.
			procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
			for _, p := range procs {
				b, err := os.ReadFile(p)
				if err == nil && strings.Contains(string(b), tc.pw) {
					t.Errorf("%s holds the password: %q", p, b)
				}
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				if code := exitOf(err); code != 0 {
					t.Errorf("clean stop: exit %d, want 0; log:\n%s", code, stderr)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("dlm node did not stop; log:\n%s", stderr)
			}
			if fileExists(filepath.Join(dir, nodeMarker)) {
				t.Errorf("marker left after a clean stop of a persistent node with a password; log:\n%s", stderr)
			}
			if strings.Contains(stderr.String(), tc.pw) {
				t.Errorf("the password is printed:\n%s", stderr)
			}
		})
	}
}

// TestNodeDataDirInUse: a second dlm node on the data directory of a
// running one is refused at once (64), before it reads the first's marker
// as a crash, waits or starts anything, and the first's marker stays.
// Failed before: the second waited --max-ttl ("the previous run did not
// stop cleanly"), then ran a second redis-server on the same directory.
func TestNodeDataDirInUse(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	dir := t.TempDir()
	p1, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	first := startNode(t, p1, dir, time.Second)
	redlocktest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(first.stderr(), "serving") },
		"the first dlm node never served; log:\n%s", first.stderr())
	p2, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	r := runDLM(t, 30*time.Second, nil, "node", "--port", strconv.Itoa(p2), "--dir", dir, "--max-ttl", "1s")
	if r.code != exitUsage || !strings.Contains(r.stderr, "used by a running dlm node") {
		t.Errorf("second dlm node on the same --dir: exit %d, want %d saying the directory is in use; stderr: %s", r.code, exitUsage, r.stderr)
	}
	if pings(p2) {
		t.Errorf("a second redis-server serves on the same data directory")
	}
	if !fileExists(filepath.Join(dir, nodeMarker)) {
		t.Errorf("the first node's marker is gone")
	}
}
