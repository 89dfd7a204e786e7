package redlocktest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/redisproc"
)

// Binary is the name of the redis-server executable looked up on PATH.
const Binary = redisproc.Binary

// Option configures the servers a Start call launches.
type Option func(*redisproc.Config)

// WithPersistence turns on AOF persistence with appendfsync always (R16.2):
// a killed node keeps every acknowledged key across a restart.
func WithPersistence() Option { return func(c *redisproc.Config) { c.Persistence = true } }

// WithArgs appends redis-server command-line arguments (such as
// "--maxmemory-policy", "allkeys-lru") to every node.
func WithArgs(args ...string) Option {
	return func(c *redisproc.Config) { c.Args = append(c.Args, args...) }
}

// WithEnv adds KEY=VALUE environment entries to every node's process (for
// libfaketime, say).
func WithEnv(env ...string) Option {
	return func(c *redisproc.Config) { c.Env = append(c.Env, env...) }
}

// WithWrapper runs redis-server under a wrapper command, such as
// "faketime", "-f", "+0".
func WithWrapper(argv ...string) Option { return func(c *redisproc.Config) { c.Wrapper = argv } }

// Available reports whether redis-server is on PATH.
func Available() bool { return redisproc.Available() }

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

// Server is one redis-server process on a loopback port, owned by a test.
// Its methods are safe for concurrent use.
type Server struct {
	*redisproc.Process
	t testing.TB
}

// Cluster is a set of independent redis-server masters.
type Cluster struct {
	// Servers are the nodes, in order.
	Servers []*Server
}

// Start launches n independent redis-server masters on free loopback ports
// and waits until each answers PING. They are killed and their directories
// removed when the test ends, even when it fails.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
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
	cfg := redisproc.Config{Dir: t.TempDir()}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := redisproc.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("redlocktest: %v", err)
	}
	t.Cleanup(p.Close)
	return &Server{Process: p, t: t}
}

// URLs returns the nodes' redis:// URLs.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.URL()
	}
	return out
}

// Restart kills the server, waits delay (R16.3's delayed restart when delay
// exceeds the max ttl) and starts it again on the same port and data
// directory; it fails the test if the server does not come back.
func (s *Server) Restart(delay time.Duration) {
	s.t.Helper()
	if err := s.Process.Restart(context.Background(), delay); err != nil {
		s.t.Fatalf("redlocktest: restart: %v", err)
	}
}

// Client returns a go-redis client for inspecting the node directly.
func (s *Server) Client() *redis.Client { return s.Process.Client() }

// MustKeys returns the keys that start with prefix, failing the test on error.
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

// MustValues returns the value of key on every server of c, in order, ""
// where it is missing or the server is down; it fails the test on another
// error.
func (c *Cluster) MustValues(key string) []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		if !s.Running() {
			continue
		}
		s.t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, ok, err := s.Inspector().Value(ctx, key)
		cancel()
		if err != nil {
			s.t.Fatalf("redlocktest: value of %q on %s: %v", key, s.Addr(), err)
		}
		if ok {
			out[i] = v
		}
	}
	return out
}

// Eventually polls cond every few milliseconds until it holds or timeout
// passes, then fails the test with msg formatted with args. Use it instead
// of sleeps. The args are evaluated where Eventually is called, before the
// wait: wrap a value that the message should show as it is at the failure
// in Later.
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

// Later is an argument of Eventually's message read when the message is
// printed (at the failure), not when Eventually is called: its String is
// fmt.Sprint of what it returns then. Format it with %v or %s.
type Later func() any

// String returns fmt.Sprint of the value f returns now.
func (f Later) String() string { return fmt.Sprint(f()) }
