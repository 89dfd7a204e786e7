package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

func node(t testing.TB, s *redlocktest.Server) *goredis.Node {
	t.Helper()
	n, err := goredis.DialNode(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// info returns one field of the server's INFO section.
func info(t *testing.T, s *redlocktest.Server, section, field string) int {
	t.Helper()
	text, err := s.Client().Info(t.Context(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s %q: %v", field, v, err)
			}
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// collect gathers the answers of started requests by tag.
type collect struct {
	mu   sync.Mutex
	ok   []bool
	err  []error
	at   []time.Time
	left int
	done chan struct{}
}

func newCollect(n int) *collect {
	return &collect{ok: make([]bool, n), err: make([]error, n), at: make([]time.Time, n), left: n, done: make(chan struct{})}
}

func (c *collect) Receive(tag int, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ok[tag], c.err[tag], c.at[tag] = ok, err, time.Now()
	if c.left--; c.left == 0 {
		close(c.done)
	}
}

func (c *collect) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("not every request answered after 30s")
	}
}

// A node that freezes (SIGSTOP) past the deadlines of the requests sent to
// it answers them with context.DeadlineExceeded by their deadline, and keeps
// its connection: once the node resumes, the next requests go over the same
// connection, with no new dial or handshake (which is what made a node at
// half the node timeout fall behind in the checker's slow-node scenario).
func TestFrozenNodeKeepsTheConnection(t *testing.T) {
	s := redlocktest.StartServer(t)
	n := node(t, s)
	ctx := t.Context()
	if ok, err := n.Acquire(ctx, "warm", "v", time.Minute); !ok || err != nil {
		t.Fatalf("first Acquire: %v %v", ok, err)
	}
	before := info(t, s, "stats", "total_connections_received")
	s.Freeze()
	t.Cleanup(s.Thaw)
	const reqs = 50
	got := newCollect(reqs)
	start := time.Now()
	for i := range reqs {
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		n.Start(dctx, adapter.Request{Op: adapter.OpAcquire, Key: "frozen:" + strconv.Itoa(i), Value: "v", TTL: time.Minute}, got, i)
	}
	got.wait(t)
	for i := range reqs {
		if !errors.Is(got.err[i], context.DeadlineExceeded) {
			t.Fatalf("request %d to the frozen node: ok=%v err=%v, want context.DeadlineExceeded", i, got.ok[i], got.err[i])
		}
		if d := got.at[i].Sub(start); d > 5*time.Second {
			t.Fatalf("request %d answered %v after it started, its deadline was 100ms", i, d)
		}
	}
	s.Thaw()
	for i := range 3 {
		if ok, err := n.Acquire(ctx, "after:"+strconv.Itoa(i), "v", time.Minute); !ok || err != nil {
			t.Fatalf("Acquire after the thaw: %v %v", ok, err)
		}
	}
	if after := info(t, s, "stats", "total_connections_received"); after != before {
		t.Fatalf("the node dialled %d new connections across the freeze, want none", after-before)
	}
}

// Many goroutines locking at once over go-redis nodes see no failure, and
// each node keeps to one connection for them.
func TestManyGoroutines(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	c, err := goredis.Dial(cl.URLs(), redlock.WithNodeTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := t.Context()
	const goroutines, pairs = 256, 10
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range pairs {
				l, err := c.Lock(ctx, fmt.Sprintf("many:%d:%d", g, i))
				if err != nil {
					errs <- fmt.Errorf("Lock: %w", err)
					return
				}
				if err := l.Unlock(ctx); err != nil {
					errs <- fmt.Errorf("Unlock: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, s := range cl.Servers {
		// The test's own inspection client holds one connection.
		if got := info(t, s, "clients", "connected_clients"); got > 2 {
			t.Errorf("node %d: %d clients connected, want the node's one (and this test's)", i, got)
		}
	}
}

// The requests of a batch run in Start order whatever the node's script
// cache holds: after SCRIPT FLUSH, a release and the acquisition of the same
// key behind it both succeed.
func TestNoScriptKeepsOrder(t *testing.T) {
	s := redlocktest.StartServer(t)
	n := node(t, s)
	ctx := t.Context()
	for round := range 3 {
		v1, v2 := "a"+strconv.Itoa(round), "b"+strconv.Itoa(round)
		if ok, err := n.Acquire(ctx, "k", v1, time.Minute); !ok || err != nil {
			t.Fatalf("round %d: Acquire: %v %v", round, ok, err)
		}
		if err := s.Client().ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		got := newCollect(3)
		n.StartAll([]adapter.Call{
			{Ctx: ctx, Req: adapter.Request{Op: adapter.OpRelease, Key: "k", Value: v1}, To: got, Tag: 0},
			{Ctx: ctx, Req: adapter.Request{Op: adapter.OpAcquire, Key: "k", Value: v2, TTL: time.Minute}, To: got, Tag: 1},
			{Ctx: ctx, Req: adapter.Request{Op: adapter.OpRelease, Key: "k", Value: v2}, To: got, Tag: 2},
		})
		got.wait(t)
		for i := range 3 {
			if !got.ok[i] || got.err[i] != nil {
				t.Fatalf("round %d, step %d: ok=%v err=%v, want ok", round, i, got.ok[i], got.err[i])
			}
		}
	}
}

// logLines records what go-redis logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
}

// A node that cannot be dialled fails the request with the dial's error and
// leaves go-redis's logger silent: nothing reaches the user's stderr.
func TestUnreachableNodeLogsNothing(t *testing.T) {
	var rec logLines
	redis.SetLogger(&rec) // process-wide, for this test only
	t.Cleanup(logging.Enable)
	port, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	n, err := goredis.DialNode("redis://127.0.0.1:" + strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for i := range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		ok, err := n.Acquire(ctx, "k", "v", time.Minute)
		cancel()
		if ok || err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("Acquire %d on a closed port: ok=%v err=%v, want connection refused", i, ok, err)
		}
		if _, _, err := n.AcquireFenced(t.Context(), "k", "f", "v", time.Minute); err == nil {
			t.Fatalf("AcquireFenced %d on a closed port: no error", i)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.lines) > 0 {
		t.Fatalf("go-redis logged %d lines, want none: %q", len(rec.lines), rec.lines)
	}
}

// A node killed under a client and restarted fails the requests meanwhile,
// serves them again once it is back, and go-redis logs nothing throughout.
func TestRestartedNodeLogsNothing(t *testing.T) {
	var rec logLines
	redis.SetLogger(&rec) // process-wide, for this test only
	t.Cleanup(logging.Enable)
	s := redlocktest.StartServer(t)
	n := node(t, s)
	if ok, err := n.Acquire(t.Context(), "before", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire before the kill: %v %v", ok, err)
	}
	s.Kill()
	for i := range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		ok, err := n.Acquire(ctx, "down"+strconv.Itoa(i), "v", time.Minute)
		cancel()
		if ok || err == nil {
			t.Fatalf("Acquire %d on a killed node: ok=%v err=%v, want an error", i, ok, err)
		}
	}
	s.Restart(0)
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		ok, err := n.Acquire(ctx, "after", "v", time.Minute)
		return ok && err == nil
	}, "the restarted node never answered again")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.lines) > 0 {
		t.Fatalf("go-redis logged %d lines, want none: %q", len(rec.lines), rec.lines)
	}
}
