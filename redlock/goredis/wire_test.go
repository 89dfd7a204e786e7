package goredis_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
	"dlm/redlock/redlocktest/faultconn"
)

// lateConn is a connection whose Write fails on demand and whose Read,
// once it fails (woken by Close), returns only when gate is closed: a
// reader goroutine that the scheduler has not run yet.
type lateConn struct {
	net.Conn
	failWrite atomic.Bool
	gate      chan struct{}
	writes    chan struct{} // one token per Write call
}

func (c *lateConn) Write(b []byte) (int, error) {
	select {
	case c.writes <- struct{}{}:
	default:
	}
	if c.failWrite.Load() {
		return 0, errors.New("lateConn: write failed on demand")
	}
	return c.Conn.Write(b)
}

func (c *lateConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && c.gate != nil {
		<-c.gate
	}
	return n, err
}

// lateDialer is a go-redis Dialer that wraps every connection it makes in
// a lateConn, kept in order.
type lateDialer struct {
	mu    sync.Mutex
	conns []*lateConn
}

func (d *lateDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &lateConn{Conn: nc, writes: make(chan struct{}, 16)}
	d.mu.Lock()
	if len(d.conns) == 0 {
		c.gate = make(chan struct{})
	}
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

func (d *lateDialer) conn(i int) *lateConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i >= len(d.conns) {
		return nil
	}
	return d.conns[i]
}

// The reader of a connection that failed touches only the requests
// written on that connection. Before the fix it took the pending list of
// the connection that replaced it: a write failed and closed connection
// 1; the next request (A: SET NX k AAAA) went out on connection 2 (dialled
// meanwhile) while the node was paused; connection 1's reader, woken late, failed A and
// emptied connection 2's list, so A's reply (OK) went to the next request
// (B: SET NX k BBBB), whose Acquire returned true while the node held
// AAAA.
func TestLateReaderKeepsToItsConnection(t *testing.T) {
	s := redlocktest.StartServer(t)
	d := &lateDialer{}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Dialer: d.dial, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	n := goredis.NewNode(c, s.Addr())
	t.Cleanup(func() { _ = n.Close() })
	ctx := t.Context()
	if ok, err := n.Acquire(ctx, "first", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire(first) = %v, %v; want true", ok, err)
	}
	c1 := d.conn(0)
	t.Cleanup(func() {
		select {
		case <-c1.gate:
		default:
			close(c1.gate)
		}
	})
	c1.failWrite.Store(true)
	fctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	ok, err := n.Acquire(fctx, "other", "v", time.Minute)
	cancel()
	if ok || err == nil {
		t.Fatalf("Acquire over a failed write = %v, %v; want an error", ok, err)
	}

	// Connection 2, dialled while the node runs (its handshake waits for
	// the node).
	if ok, err := n.Acquire(ctx, "warm", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire(warm) = %v, %v; want true", ok, err)
	}
	c2 := d.conn(1)
	if c2 == nil {
		t.Fatal("no second connection")
	}
	for len(c2.writes) > 0 {
		<-c2.writes
	}
	s.Freeze()
	thawed := false
	defer func() {
		if !thawed {
			s.Thaw()
		}
	}()
	type result struct {
		ok  bool
		err error
	}
	aDone := make(chan result, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		ok, err := n.Acquire(actx, "k", "AAAA", time.Minute)
		aDone <- result{ok, err}
	}()
	// A is on the wire of connection 2 (the node is paused).
	select {
	case <-c2.writes:
	case <-time.After(10 * time.Second):
		t.Fatal("A was never written on a new connection")
	}
	close(c1.gate) // connection 1's reader wakes, late
	a := <-aDone
	if a.ok {
		t.Fatalf("A = true while the node was paused; want an error")
	}
	bDone := make(chan result, 1)
	go func() {
		ok, err := n.Acquire(ctx, "k", "BBBB", time.Minute)
		bDone <- result{ok, err}
	}()
	select {
	case <-c2.writes:
	case <-time.After(10 * time.Second):
		t.Fatal("B was never written")
	}
	s.Thaw()
	thawed = true
	b := <-bDone
	held, _, err := s.Inspector().Value(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if held != "AAAA" {
		t.Fatalf("the node holds %q, want AAAA (A reached it first)", held)
	}
	if b.ok || b.err != nil {
		t.Errorf("B's Acquire = %v, %v while the node holds A's value; want false, nil (A's reply went to B: %v)", b.ok, b.err, a.err)
	}
}

// holdNode returns a node over s whose connections are HoldConns (d),
// its go-redis client configured by o.
func holdNode(t *testing.T, s *redlocktest.Server, o redis.Options) (*goredis.Node, *faultconn.HoldDialer) {
	t.Helper()
	d := &faultconn.HoldDialer{}
	o.Addr, o.Dialer, o.MaxRetries, o.ContextTimeoutEnabled = s.Addr(), d.Dial, -1, true
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	n := goredis.NewNode(c, s.Addr())
	t.Cleanup(func() { _ = n.Close() })
	if ok, err := n.Acquire(t.Context(), "first", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire(first) = %v, %v; want true", ok, err)
	}
	return n, d
}

// breakConn makes the next write on c fail: the node gives c up.
func breakConn(t *testing.T, n *goredis.Node, c *faultconn.HoldConn) {
	t.Helper()
	c.FailWrites(true)
	if ok, err := n.Acquire(t.Context(), "other", "v", time.Minute); ok || err == nil {
		t.Fatalf("Acquire over a failed write = %v, %v; want an error", ok, err)
	}
	c.FailWrites(false)
}

// A lock's requests to one node run there in the order they were made,
// whatever way they take: a fenced acquisition (attempt 2) made after a
// release of the same value (attempt 1, as WithValue retries) never runs
// before that release. Before the fix the fenced acquisition went through
// the go-redis pool and the release over the node's own connection; with
// the release's bytes held back on the way (a node that reads them late),
// the acquisition set the key, answered true, and the late release then
// deleted it.
func TestFencedAcquisitionStaysBehindRelease(t *testing.T) {
	s := redlocktest.StartServer(t)
	n, d := holdNode(t, s, redis.Options{})
	ctx := t.Context()
	const key, fenceKey, value = "fenced", "dlm:fence:fenced", "attempt-value"
	own := d.Conns()[0] // the node's own connection
	own.Hold()
	rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := n.Release(rctx, key, value) // attempt 1's release, held back
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held Release = %v; want a deadline error", err)
	}
	acquireFencedBehindHeld(t, n, own, key, fenceKey, value) // attempt 2
	// A request behind both on the node's connection: the release ran.
	if _, err := n.Acquire(ctx, "barrier", "v", time.Minute); err != nil {
		t.Fatal(err)
	}
	held, _, err := s.Inspector().Value(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if held != value {
		t.Errorf("the node holds %q under %s after an acquisition answered true; want %q (attempt 1's release ran after it)", held, key, value)
	}
}

// acquireFencedBehindHeld makes a fenced acquisition of key on n while own
// holds back the writes before it, lets them go once the acquisition was
// written behind them (or answered over another way), and fails t unless
// it answered true.
func acquireFencedBehindHeld(t *testing.T, n *goredis.Node, own *faultconn.HoldConn, key, fenceKey, value string) {
	t.Helper()
	type result struct {
		ok  bool
		err error
	}
	acq := make(chan result, 1)
	go func() {
		ok, _, err := n.AcquireFenced(t.Context(), key, fenceKey, value, time.Minute)
		acq <- result{ok, err}
	}()
	var got result
	answered := false
	// Written behind the held writes (held too), or answered over another way.
	for !answered && own.HeldWrites() < 2 {
		select {
		case got = <-acq:
			answered = true
		case <-time.After(time.Millisecond):
		}
	}
	if err := own.Release(); err != nil {
		t.Fatal(err)
	}
	if !answered {
		got = <-acq
	}
	if !got.ok || got.err != nil {
		t.Fatalf("AcquireFenced = %v, %v; want true", got.ok, got.err)
	}
}

// A request left behind on a connection the node's client gave up never
// runs on the node after the requests of the connection that replaced it.
// Attempt 1's release of a value was on its way on connection 1 (held
// back) when a write failed and the client gave connection 1 up; attempt 2
// acquired the same value (WithValue) over connection 2. Before the fix
// the node read the late release after that and deleted the key attempt 2
// counted; now connection 2's handshake closes connection 1 on the node
// (CLIENT KILL ID) before it carries any request.
func TestReplacedConnectionCannotRunLate(t *testing.T) {
	s := redlocktest.StartServer(t)
	n, d := holdNode(t, s, redis.Options{})
	faultconn.LateRelease(t, n, d, s.Client())
}

// A user whose ACL refuses CLIENT (so neither CLIENT ID nor CLIENT KILL)
// still gets a working node, dialled again after a failure: the fence on
// replaced connections is skipped, not an error.
func TestConnectionWithoutClientCommands(t *testing.T) {
	s := redlocktest.StartServer(t)
	ctx := t.Context()
	if err := s.Client().Do(ctx, "ACL", "SETUSER", "limited", "on", ">pw", "~*", "&*", "+@all", "-client").Err(); err != nil {
		t.Fatal(err)
	}
	n, d := holdNode(t, s, redis.Options{Username: "limited", Password: "pw"})
	breakConn(t, n, d.Conns()[0])
	if ok, err := n.Release(ctx, "first", "v"); !ok || err != nil {
		t.Fatalf("Release over the next connection = %v, %v; want true", ok, err)
	}
}
