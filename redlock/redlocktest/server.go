package redlocktest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Binary is the name of the redis-server executable looked up on PATH.
const Binary = "redis-server"

// Option configures the servers a Start call launches.
type Option func(*config)

type config struct {
	persistence bool
	args        []string
	env         []string
	wrapper     []string
}

// WithPersistence turns on AOF persistence with appendfsync always (R16.2):
// a killed node keeps every acknowledged key across a restart.
func WithPersistence() Option { return func(c *config) { c.persistence = true } }

// WithArgs appends redis-server command-line arguments (such as
// "--maxmemory-policy", "allkeys-lru") to every node.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// WithEnv adds KEY=VALUE environment entries to every node's process (for
// libfaketime, say).
func WithEnv(env ...string) Option { return func(c *config) { c.env = append(c.env, env...) } }

// WithWrapper runs redis-server under a wrapper command, such as
// []string{"faketime", "-f", "+0"}.
func WithWrapper(argv ...string) Option { return func(c *config) { c.wrapper = argv } }

// Available reports whether redis-server is on PATH.
func Available() bool {
	_, err := exec.LookPath(Binary)
	return err == nil
}

// Require skips t when redis-server is missing, or fails it when the CI or
// DLM_REQUIRE_REDIS environment variable is set.
func Require(t testing.TB) {
	t.Helper()
	if Available() {
		return
	}
	msg := "redis-server not found on PATH: install it (Debian: apt-get install redis-server) or run `make test`, which does"
	if os.Getenv("CI") != "" || os.Getenv("DLM_REQUIRE_REDIS") != "" {
		t.Fatal(msg + " (CI or DLM_REQUIRE_REDIS is set, so this is a failure)")
	}
	t.Skip("SKIPPED, " + msg)
}

// Server is one redis-server process on a loopback port. Its methods are safe
// for concurrent use.
type Server struct {
	t    testing.TB
	cfg  config
	dir  string
	port int

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	frozen  bool
	stopped bool
	log     *syncBuffer
	client  *redis.Client
}

// Cluster is a set of independent redis-server masters.
type Cluster struct {
	// Servers are the nodes, in order.
	Servers []*Server
}

// Start launches n independent redis-server masters on free loopback ports
// and waits until each answers PING. They are stopped and their directories
// removed when the test ends.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	Require(t)
	c := &Cluster{}
	for i := 0; i < n; i++ {
		c.Servers = append(c.Servers, StartServer(t, opts...))
	}
	return c
}

// StartServer launches one redis-server master on a free loopback port.
func StartServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	Require(t)
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{t: t, cfg: cfg, dir: t.TempDir()}
	t.Cleanup(s.cleanup)
	var err error
	for try := 0; try < 5; try++ {
		if s.port, err = freePort(); err != nil {
			continue
		}
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("redlocktest: cannot start redis-server: %v", err)
	return nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URLs returns the nodes' redis:// URLs.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.URL()
	}
	return out
}

// Addr returns host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port returns the server's port.
func (s *Server) Port() int { return s.port }

// URL returns the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Dir returns the server's data directory.
func (s *Server) Dir() string { return s.dir }

func (s *Server) args() []string {
	a := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--daemonize", "no",
		"--protected-mode", "no",
		"--loglevel", "warning",
		"--logfile", "",
	}
	if s.cfg.persistence {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	return append(a, s.cfg.args...)
}

// start launches the process and waits for PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	argv := append(append([]string{}, s.cfg.wrapper...), Binary)
	argv = append(argv, s.args()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), s.cfg.env...)
	s.log = new(syncBuffer)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited, s.frozen, s.stopped = cmd, exited, false, false
	if s.client == nil {
		s.client = redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second, Protocol: 2, DisableIdentity: true})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := s.client.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on port %d exited: %s", s.port, strings.TrimSpace(s.log.String()))
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on port %d did not answer PING within 10s: %v", s.port, err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline above
	}
}

// Kill sends SIGKILL (a crash: nothing is flushed) and waits for the exit.
func (s *Server) Kill() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *Server) killLocked() {
	if s.cmd == nil || s.stopped {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	if s.frozen {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
	<-s.exited
	s.stopped, s.frozen = true, false
}

// Stop shuts the server down cleanly (SHUTDOWN: an AOF is flushed) and waits
// for the exit.
func (s *Server) Stop() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return
	}
	if s.frozen {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		s.frozen = false
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM) // redis-server shuts down cleanly on SIGTERM
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
	s.stopped = true
}

// Restart starts the server again on the same port and data directory after
// delay (R16.3's delayed restart when delay exceeds the max ttl); it kills
// the running process first if there is one.
func (s *Server) Restart(delay time.Duration) {
	s.t.Helper()
	s.mu.Lock()
	s.killLocked()
	s.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay) // the delay itself is the behaviour under test (R16.3)
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("redlocktest: restart: %v", err)
	}
}

// Freeze stops the process with SIGSTOP: it keeps its sockets but answers
// nothing, like a node in a long pause.
func (s *Server) Freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && !s.stopped && !s.frozen {
		_ = s.cmd.Process.Signal(syscall.SIGSTOP)
		s.frozen = true
	}
}

// Thaw resumes a frozen process with SIGCONT.
func (s *Server) Thaw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && !s.stopped && s.frozen {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		s.frozen = false
	}
}

// Running reports whether the process is up (frozen counts as up).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil && !s.stopped
}

// Client returns a go-redis client for inspecting the node directly.
func (s *Server) Client() *redis.Client { return s.client }

// Keys returns the keys that start with prefix (by SCAN).
func (s *Server) Keys(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	iter := s.client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

// MustKeys is Keys that fails the test on error.
func (s *Server) MustKeys(prefix string) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := s.Keys(ctx, prefix)
	if err != nil {
		s.t.Fatalf("redlocktest: keys on %s: %v", s.Addr(), err)
	}
	return keys
}

// Log returns what the server printed.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

func (s *Server) cleanup() {
	s.mu.Lock()
	s.killLocked()
	c := s.client
	s.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	_ = os.RemoveAll(filepath.Clean(s.dir))
}

// Eventually polls cond every few milliseconds until it holds or timeout
// passes, then fails the test with msg. Use it instead of sleeps.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %s", timeout, fmt.Sprintf(msg, args...))
		}
		time.Sleep(5 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

// syncBuffer is a bytes.Buffer safe for the process's writes and our reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
