package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// binDir holds the dlm binary that TestMain builds once for the end-to-end
// tests of this package, which run it as separate processes.
var binDir string

// TestMain of package main (cmd/dlm): builds the dlm binary once into a
// temporary directory (with -race when the tests run with it, so that the
// end-to-end runs check dlm itself), runs the tests, checks for leaked
// goroutines.
//
// Most tests here wait (on dlm and redis-server processes, ttls, rounds)
// far more than they compute, so the tests marked parallel run up to 2 per
// CPU at once unless -parallel is given; the few whose bounds measure time
// or whose margin is the clock drift (a guard that must end the command by
// the validity's end, before the next holder starts)
// stay serial and run first, alone in this package.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
	dir, err := os.MkdirTemp("", "dlm-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	quietRedisLog()
	build := []string{"build", "-o", filepath.Join(dir, "dlm")}
	if raceEnabled {
		build = append(build, "-race")
	}
	out, err := exec.Command("go", append(build, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build dlm: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// dlmBin returns the path of the dlm binary built by TestMain.
func dlmBin() string { return filepath.Join(binDir, "dlm") }

// result is what a finished dlm process left.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// dlmCmd prepares the dlm binary with args; env entries are appended to the
// test's environment (DLM_NODES is cleared first).
func dlmCmd(t *testing.T, env []string, args ...string) (*exec.Cmd, *syncBuf, *syncBuf) {
	t.Helper()
	cmd := exec.Command(dlmBin(), args...)
	var base []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, nodesEnv+"=") {
			base = append(base, e)
		}
	}
	cmd.Env = append(base, env...)
	var stdout, stderr syncBuf
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, &stdout, &stderr
}

// syncBuf is a bytes.Buffer that a process may write while the test reads.
type syncBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runDLM runs the dlm binary to completion (bounded by timeout).
func runDLM(t *testing.T, timeout time.Duration, env []string, args ...string) result {
	t.Helper()
	cmd, stdout, stderr := dlmCmd(t, env, args...)
	return finishDLM(t, cmd, stdout, stderr, timeout, args)
}

// finishDLM runs cmd, prepared by dlmCmd, to completion (bounded by
// timeout).
func finishDLM(t *testing.T, cmd *exec.Cmd, stdout, stderr *syncBuf, timeout time.Duration, args []string) result {
	t.Helper()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dlm: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	err := waitExit(t, cmd, done, timeout, "dlm %q did not finish within %v\nstdout: %s\nstderr: %s", args, timeout, stdout, stderr)
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("dlm %q: %v", args, err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

// keysOn returns the lock keys on every running server of c.
func keysOn(c *redlocktest.Cluster) []string {
	var all []string
	for _, s := range c.Servers {
		if s.Running() {
			all = append(all, s.MustKeys(redlock.DefaultKeyPrefix)...)
		}
	}
	return all
}

// counterScript is the child of the concurrency tests: a read-modify-write
// of a shared file with a pause in between, which loses updates unless the
// writers are mutually excluded.
const counterScript = `n=$(cat "$1"); sleep 0.05; echo $((n+1)) > "$1"`

// TestLockCounter runs concurrent dlm lock processes, each incrementing a
// shared file under the lock; the count must be exact (R1.1), with all nodes
// up and with 2 of 5 down (R1.3).
func TestLockCounter(t *testing.T) {
	t.Parallel()
	for _, down := range []int{0, 2} {
		t.Run(fmt.Sprintf("%d-of-5-down", down), func(t *testing.T) {
			t.Parallel()
			c := redlocktest.Start(t, 5)
			for _, s := range c.Servers[:down] {
				s.Kill()
			}
			file := filepath.Join(t.TempDir(), "count")
			if err := os.WriteFile(file, []byte("0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			const procs, each = 4, 2
			var wg sync.WaitGroup
			results := make([]result, procs*each)
			for p := 0; p < procs; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						results[p*each+i] = runDLM(t, 60*time.Second, nil, "lock", "--nodes", strings.Join(c.URLs(), ","),
							"--wait", "30s", "--ttl", "5s", "--node-timeout", "1s", "counter", "--", "sh", "-c", counterScript, "sh", file)
					}
				}()
			}
			wg.Wait()
			for i, r := range results {
				if r.code != 0 {
					t.Errorf("dlm lock #%d: exit %d, want 0; stderr: %s", i, r.code, r.stderr)
				}
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.TrimSpace(string(b)), strconv.Itoa(procs*each); got != want {
				t.Errorf("count = %s, want %s: updates were lost, so two holders overlapped", got, want)
			}
			if k := keysOn(c); len(k) != 0 {
				t.Errorf("lock keys left behind: %v", k)
			}
		})
	}
}

// TestLockNoQuorum: with 3 of 5 nodes down each dlm lock exits 69 quickly,
// naming the nodes that failed; the command never runs.
func TestLockNoQuorum(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 5)
	for _, s := range c.Servers[:3] {
		s.Kill()
	}
	marker := filepath.Join(t.TempDir(), "ran")
	var wg sync.WaitGroup
	results := make([]result, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runDLM(t, 30*time.Second, []string{nodesEnv + "=" + strings.Join(c.URLs(), ",")},
				"lock", "--node-timeout", "1s", "job", "--", "touch", marker)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != exitUnavailable {
			t.Errorf("#%d: exit %d, want %d; stderr: %s", i, r.code, exitUnavailable, r.stderr)
		}
		if !strings.Contains(r.stderr, "no quorum") || !strings.Contains(r.stderr, c.Servers[0].Addr()) {
			t.Errorf("#%d: stderr %q does not give the reason (no quorum) and name the failed node %s", i, r.stderr, c.Servers[0].Addr())
		}
		if r.elapsed > 10*time.Second {
			t.Errorf("#%d: took %v; one try should fail fast", i, r.elapsed)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without the lock")
	}
	if k := keysOn(c); len(k) != 0 {
		t.Errorf("lock keys left behind: %v", k)
	}
}

// TestLockHeldElsewhere: a second dlm lock on a held resource exits 75.
func TestLockHeldElsewhere(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	ready := filepath.Join(t.TempDir(), "ready")
	holder, _, stderr := dlmCmd(t, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "res", "--", "sh", "-c",
		`touch "$1"; while :; do sleep 0.05; done`, "sh", ready)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Signal(syscall.SIGTERM); _ = holder.Wait() })
	redlocktest.Eventually(t, 20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil },
		"the first dlm lock never ran its command; stderr: %s", stderr)
	// --wait 3s: a dlm starting on a loaded machine may not finish one
	// attempt within a shorter wait, and then says "no node answered in
	// time" instead of why (the same bound as TestLockSeveralResources).
	r := runDLM(t, 30*time.Second, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "--wait", "3s", "res", "--", "true")
	if r.code != exitNotAcquired {
		t.Errorf("exit %d, want %d; stderr: %s", r.code, exitNotAcquired, r.stderr)
	}
	if !strings.Contains(r.stderr, "held elsewhere") {
		t.Errorf("stderr %q does not say the lock is held elsewhere", r.stderr)
	}
}

// TestLockLost deletes the keys under a running dlm lock: the extension
// fails (R17), the command is terminated and dlm exits 74.
func TestLockLost(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	ready := filepath.Join(t.TempDir(), "ready")
	// A ttl of 3 s: at 900 ms the lock itself ended, unextended, before
	// the test looked (a fresh-clone make test at load 9-19: "the lock key
	// never appeared on all 3 nodes: []"); the loss below is noticed at
	// the next extension, a second after.
	cmd, _, stderr := dlmCmd(t, nil, "lock", "--nodes", strings.Join(c.URLs(), ","), "--ttl", "3s", "--node-timeout", "1s", "--grace", "2s",
		"res", "--", "sh", "-c", `echo "$DLM_LOCK_RESOURCE $DLM_LOCK_VALUE" > "$1"; exec sleep 60`, "sh", ready)
	done := startReaped(t, cmd)
	var env string
	redlocktest.Eventually(t, 20*time.Second, func() bool {
		b, err := os.ReadFile(ready)
		env = strings.TrimSpace(string(b))
		return err == nil && env != ""
	}, "the command never ran; stderr: %s", stderr)
	// The acquisition returns at a quorum; the last SET lands just after,
	// or never: on a loaded machine the third node's request can miss the
	// node timeout.
	redlocktest.Eventually(t, 10*time.Second, func() bool { return len(keysOn(c)) >= 2 },
		"the lock key never appeared on 2 of the 3 nodes: %v", keysOn(c))
	keys := keysOn(c)
	for _, s := range c.Servers {
		v, ok, err := s.Inspector().Value(t.Context(), keys[0])
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		if want := "res " + v; env != want {
			t.Errorf("child environment %q, want %q (DLM_LOCK_RESOURCE DLM_LOCK_VALUE)", env, want)
		}
	}
	for _, s := range c.Servers {
		if err := s.Client().Del(t.Context(), keys[0]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	err := waitExit(t, cmd, done, 30*time.Second, "dlm lock did not end after its keys were deleted; stderr: %s", stderr)
	if code := exitOf(err); code != exitLockLost {
		t.Errorf("exit %d, want %d; stderr: %s", code, exitLockLost, stderr)
	}
	if !strings.Contains(stderr.String(), "lost") {
		t.Errorf("stderr %q does not say the lock was lost", stderr)
	}
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// exitOf returns the exit code of a Wait error.
func exitOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// startReaped starts cmd, and kills and reaps it when the test ends
// (continued first, should it be stopped); the channel it returns gives
// cmd's Wait error once it exited.
func startReaped(t *testing.T, cmd *exec.Cmd) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		done <- cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Process.Signal(syscall.SIGCONT)
		<-exited
	})
	return done
}

// waitExit returns the Wait error of cmd that done gives within bound;
// past the bound it kills cmd and fails t with format and args.
func waitExit(t *testing.T, cmd *exec.Cmd, done <-chan error, bound time.Duration, format string, args ...any) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf(format, args...)
		return nil
	}
}

// TestLockSignals: SIGTERM and SIGINT sent to dlm lock reach the command;
// dlm exits with the command's code and releases the lock afterwards.
func TestLockSignals(t *testing.T) {
	c := redlocktest.Start(t, 3)
	tests := []struct {
		sig  syscall.Signal
		name string
		code int
	}{
		{syscall.SIGTERM, "TERM", 3},
		{syscall.SIGINT, "INT", 4},
	}
	for _, tt := range tests {
		sig := tt.sig
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
			script := `trap 'echo TERM > "$2"; exit 3' TERM; trap 'echo INT > "$2"; exit 4' INT; touch "$1"; while :; do sleep 0.05; done`
			cmd, _, stderr := dlmCmd(t, nil, "lock", "--nodes", strings.Join(c.URLs(), ","), "--node-timeout", "1s", "res", "--", "sh", "-c", script, "sh", ready, got)
			done := startReaped(t, cmd)
			redlocktest.Eventually(t, 20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil },
				"the command never ran; stderr: %s", stderr)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := waitExit(t, cmd, done, 30*time.Second, "dlm lock did not end after %v; stderr: %s", sig, stderr)
			if code := exitOf(err); code != tt.code {
				t.Errorf("exit %d, want the command's %d; stderr: %s", code, tt.code, stderr)
			}
			if b, _ := os.ReadFile(got); strings.TrimSpace(string(b)) != tt.name {
				t.Errorf("command trapped %q, want %q", strings.TrimSpace(string(b)), tt.name)
			}
			if k := keysOn(c); len(k) != 0 {
				t.Errorf("lock not released after the command exited: keys %v", k)
			}
		})
	}
}

// TestUsage: bad usage exits 64 with the reason, before touching any node.
func TestUsage(t *testing.T) {
	t.Parallel()
	good := "redis://127.0.0.1:1"
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"lock no nodes", nil, []string{"lock", "r", "--", "true"}, "no nodes"},
		{"lock bad URL", nil, []string{"lock", "--nodes", "http://x:1", "r", "--", "true"}, "unknown scheme"},
		{"lock bad URL in env", []string{nodesEnv + "=redis://h:99999"}, []string{"lock", "r", "--", "true"}, "port"},
		{"lock missing --", nil, []string{"lock", "--nodes", good, "r", "true"}, "missing `--`"},
		{"lock no command", nil, []string{"lock", "--nodes", good, "r", "--"}, "no command"},
		{"lock no resource", nil, []string{"lock", "--nodes", good, "--", "true"}, "no RESOURCE before `--`"},
		{"lock empty resource", nil, []string{"lock", "--nodes", good, "", "--", "true"}, "RESOURCE is empty"},
		{"lock empty resource in a set", nil, []string{"lock", "--nodes", good, "a", "", "--", "true"}, "RESOURCE 2 of 2 is empty"},
		{"lock resource twice", nil, []string{"lock", "--nodes", good, "a", "b", "a", "--", "true"}, `RESOURCE "a" is given twice`},
		{"lock read and write", nil, []string{"lock", "--nodes", good, "--read", "--write", "r", "--", "true"}, "--read or --write, not both"},
		{"lock read set", nil, []string{"lock", "--nodes", good, "--read", "a", "b", "--", "true"}, "lock one RESOURCE, got 2"},
		{"lock read fencing", nil, []string{"lock", "--nodes", good, "--read", "--fencing", "r", "--", "true"}, "carries no fencing token"},
		{"lock ttl 0", nil, []string{"lock", "--nodes", good, "--ttl", "0", "r", "--", "true"}, "--ttl must be positive"},
		{"lock negative wait", nil, []string{"lock", "--nodes", good, "--wait", "-1s", "r", "--", "true"}, "--wait"},
		{"lock bad ttl", nil, []string{"lock", "--nodes", good, "--ttl", "ten", "r", "--", "true"}, "invalid argument"},
		{"lock relative unix path", nil, []string{"lock", "--nodes", "unix://relative/sock", "r", "--", "true"}, "unix:///absolute/path"},
		{"lock unix path without slash", nil, []string{"lock", "--nodes", "unix:sock", "r", "--", "true"}, "unix:///absolute/path"},
		{"lock empty host", nil, []string{"lock", "--nodes", "redis://:7601", "r", "--", "true"}, "no host name"},
		{"status empty host", nil, []string{"status", "--nodes", "rediss://user:pw@:7601"}, "no host name"},
		{"doctor relative unix path", nil, []string{"doctor", "--nodes", "unix://./sock"}, "unix:///absolute/path"},
		{"lock ttl too long", nil, []string{"lock", "--nodes", good, "--ttl", "2562047h", "r", "--", "true"}, "--ttl: 2562047h0m0s is over the limit of 24h0m0s"},
		{"node max-ttl too long", nil, []string{"node", "--max-ttl", "2562047h"}, "--max-ttl: 2562047h0m0s is over the limit of 25h0m0s"},
		{"demo duration too long", nil, []string{"demo", "--duration", "1000h"}, "--duration: 1000h0m0s is over the limit of 1h0m0s"},
		{"status no nodes", nil, []string{"status"}, "no nodes"},
		{"doctor bad URL", nil, []string{"doctor", "--nodes", "redis://"}, "no host"},
		{"node bad port", nil, []string{"node", "--port", "0"}, "--port"},
		{"node bad max-ttl", nil, []string{"node", "--max-ttl", "0"}, "--max-ttl"},
		{"demo workers 0", nil, []string{"demo", "--workers", "0"}, "--workers"},
		{"demo duration 0", nil, []string{"demo", "--duration", "0"}, "--duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runDLM(t, 20*time.Second, tt.env, tt.args...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not contain the reason %q", r.stderr, tt.want)
			}
		})
	}
}

// TestLockFencing: with --fencing the command gets DLM_LOCK_TOKEN, and a
// later grant gets a greater token (R18).
func TestLockFencing(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3, redlocktest.WithPersistence())
	out := filepath.Join(t.TempDir(), "tokens")
	for i := 0; i < 2; i++ {
		r := runDLM(t, 30*time.Second, nil, "lock", "--nodes", strings.Join(c.URLs(), ","), "--node-timeout", "1s", "--fencing",
			"res", "--", "sh", "-c", `echo "$DLM_LOCK_TOKEN" >> "$1"`, "sh", out)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0; stderr: %s", r.code, r.stderr)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("tokens %q, want two", f)
	}
	t1, err1 := strconv.ParseUint(f[0], 10, 64)
	t2, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || t1 == 0 || t2 <= t1 {
		t.Errorf("tokens %q: want two positive numbers, increasing", f)
	}
}

// TestLockExtensionBound: with --max-extensions 1 the lock runs out after
// one extension (R17: bounded), and the command is stopped: exit 74. The
// ttl (6s) and node timeout (2s) are ones a loaded machine keeps: the lock
// must run out at the bound, not be lost to a slow answer (with 1s, every
// node timed out on the first acquisition of a run at load 30: exit 69).
func TestLockExtensionBound(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	r := runDLM(t, 120*time.Second, nil, "lock", "--nodes", strings.Join(c.URLs(), ","), "--ttl", "6s", "--node-timeout", "2s",
		"--max-extensions", "1", "--grace", "2s", "res", "--", "sleep", "300")
	if r.code != exitLockLost {
		t.Errorf("exit %d, want %d; stderr: %s", r.code, exitLockLost, r.stderr)
	}
	if !strings.Contains(r.stderr, "extension bound") {
		t.Errorf("stderr %q does not name the extension bound", r.stderr)
	}
	if r.elapsed > 100*time.Second {
		t.Errorf("took %v: the command was not stopped at the bound", r.elapsed)
	}
}
