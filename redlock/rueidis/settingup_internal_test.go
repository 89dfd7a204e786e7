package rueidis

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock/redlocktest"

	"github.com/redis/rueidis"
)

// TestSettingUpOnlyWhileConnecting: a node's requests run on goroutines of
// their own (settingup.go) only while it has no established connection:
// once one answered, the node counts itself connected again, so the hot
// path stays without a goroutine; a dial that failed is not counted as a
// connection being made.
func TestSettingUpOnlyWhileConnecting(t *testing.T) {
	refused := redlocktest.RefusingAddr(t) // a port that refuses connections
	down, err := DialNode("redis://" + refused)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if _, err := down.Acquire(t.Context(), "k", "v", time.Minute); err == nil {
		t.Fatal("Acquire on a refused port = nil error")
	}
	if m := down.setups.making.Load(); m != 0 || down.setups.connected() {
		t.Errorf("after a refused dial: %d connections counted as being made, connected %v; want 0, false", m, down.setups.connected())
	}

	n := node(t, redlocktest.StartServer(t))
	if n.setups.connected() {
		t.Error("a node that never connected counts itself connected")
	}
	if ok, err := n.Acquire(t.Context(), "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if !n.setups.connected() {
		t.Errorf("after a request answered: live %d, making %d; want connected (live > 0, making 0)", n.setups.live.Load(), n.setups.making.Load())
	}
}

// node dials s, closed when t ends.
func node(t *testing.T, s *redlocktest.Server) *Node {
	t.Helper()
	n, err := DialNode(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// TestARequestOutlivesTheSetUpItJoined: rueidis makes a new node's
// connection within the context of the request that found none, and fails
// every request that waited for that set-up with its error. A request with
// a 20 s deadline that came while a request with a 300 ms deadline was
// setting the connection up (its server frozen) failed with "context
// deadline exceeded" when the other's deadline ended the set-up, although
// it was never sent and its own deadline was far off (the conformance case
// Batch/StartDeadlines failed so, 7 of 40 runs at load ~20). It must wait
// for a set-up of its own instead, and be answered once the server
// answers. Several such requests, on the node's client as its batches
// send them: rueidis spreads requests over a few connections, and those
// that go to another one make their own set-up.
func TestARequestOutlivesTheSetUpItJoined(t *testing.T) {
	const long = 8
	s := redlocktest.StartServer(t)
	n := node(t, s)
	s.Freeze()
	defer s.Thaw()
	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	shortDone := make(chan error, 1)
	go func() {
		c := n.conn(short)
		shortDone <- c.Do(short, c.B().Ping().Build()).Error()
	}()
	// The short request's set-up has its connection (the frozen server
	// accepts it) and waits for the handshake's answer.
	var first net.Conn
	redlocktest.Eventually(t, 10*time.Second, func() bool { first = setUpConn(n, nil); return first != nil },
		"the short request's connection was not made")
	got := make(chan error, long)
	for range long {
		go func() {
			c := n.conn(t.Context())
			got <- c.Do(t.Context(), c.B().Ping().Build()).Error()
		}()
	}
	if err := <-shortDone; err == nil {
		t.Fatal("the short request to a frozen server was answered")
	}
	// The short request's set-up ends: the long requests that joined it
	// either failed with it, or make a set-up of their own.
	var early []error
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		select {
		case err := <-got:
			early = append(early, err)
			return true
		default:
			return setUpConn(n, first) != nil && setUpConn(n, nil) != first
		}
	}, "the short request's set-up did not end")
	s.Thaw()
	for i := len(early); i < long; i++ {
		select {
		case err := <-got:
			early = append(early, err)
		case <-time.After(20 * time.Second):
			t.Fatal("a request with a far deadline was not answered 20 s after the server answered")
		}
	}
	for _, err := range early {
		if err != nil {
			t.Errorf("a request with a far deadline, which waited for another request's set-up: %v; want it answered once the server answers", err)
		}
	}
}

// setUpConn returns a connection of n in its set-up other than not, nil
// when there is none.
func setUpConn(n *Node, not net.Conn) net.Conn {
	n.setups.mu.Lock()
	defer n.setups.mu.Unlock()
	for c := range n.setups.conns {
		if c != not {
			return c
		}
	}
	return nil
}

// TestARequestOutlivesADialItJoined: as TestARequestOutlivesTheSetUpItJoined,
// for a set-up cut in its dial: the net package fails a dial whose
// context ended with "i/o timeout", not with the context's error, and the
// requests that had joined that set-up failed with it (8 of 8 in
// TestARequestOutlivesTheSetUpItJoined, in a fresh-clone run beside two
// busy loops: "dial tcp 127.0.0.1:10303: i/o timeout", 0.34 s after the
// start, before the server was even thawed). The first dial here waits
// for the end of the short request that made it, then dials as the net
// package does then.
func TestARequestOutlivesADialItJoined(t *testing.T) {
	const long = 4
	s := redlocktest.StartServer(t)
	var dials atomic.Int32
	dialling := make(chan struct{})
	n, err := DialNode(s.URL(), func(o *rueidis.ClientOption) {
		o.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			if dials.Add(1) == 1 {
				close(dialling)
				<-ctx.Done()
			}
			return d.DialContext(ctx, "tcp", addr)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	short, cancel := context.WithCancel(t.Context())
	shortDone := make(chan error, 1)
	go func() {
		c := n.conn(short)
		shortDone <- c.Do(short, c.B().Ping().Build()).Error()
	}()
	<-dialling
	got := make(chan error, long)
	for range long {
		go func() {
			c := n.conn(t.Context())
			got <- c.Do(t.Context(), c.B().Ping().Build()).Error()
		}()
	}
	// The long requests wait for the dial under way (nothing else could
	// answer them), then the short request ends.
	redlocktest.Eventually(t, 10*time.Second, func() bool { return n.setups.making.Load() == 1 && len(got) == 0 },
		"the dial under way is not counted")
	cancel()
	if err := <-shortDone; err == nil {
		t.Fatal("the short request was answered")
	}
	for range long {
		select {
		case err := <-got:
			if err != nil {
				t.Errorf("a request without a deadline, which waited for another request's dial: %v; want it answered", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a request without a deadline was not answered 20 s after the other's dial ended")
		}
	}
}

// lateTimer is a context whose deadline has passed and whose timer has not
// run yet (Err is still nil): what a request's context is, on a busy
// machine, at the moment the net package times its dial out.
type lateTimer struct{ context.Context }

func (lateTimer) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A dial, or a handshake, that times out at the dialing request's deadline
// fails with context.DeadlineExceeded, the error of that request's end,
// even before its context's timer ran: the requests that waited for that
// set-up then make one of their own. Failed before the fix with the net
// package's error, "dial tcp 127.0.0.1:12515: i/o timeout" (every request
// of TestARequestOutlivesTheSetUpItJoined failed so in a fresh-clone run
// beside two busy loops), and "i/o timeout" from the handshake's write.
func TestASetUpTimedOutAtItsDeadlineEndsAsItsContext(t *testing.T) {
	s := redlocktest.StartServer(t)
	ctx := lateTimer{context.Background()}
	for _, tc := range []struct {
		name  string
		inner dialFn // nil: rueidis' own dial
	}{
		{"the dial", nil},
		{"the handshake", func(_ context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return d.DialContext(context.Background(), "tcp", addr) // made: the handshake is what times out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &connFence{}
			nc, err := f.wrap(tc.inner)(ctx, s.Addr(), &net.Dialer{}, nil)
			if err == nil {
				_ = nc.Close()
				t.Fatal("a set-up past its request's deadline made a connection")
			}
			if err != context.DeadlineExceeded {
				t.Errorf("a set-up past its request's deadline (its timer not run yet): %v, want context.DeadlineExceeded, the request's end", err)
			}
		})
	}
}

// timerNeverRuns is a context with a deadline whose timer never runs (Err
// stays nil), as on a machine too busy to run it before a read times out.
type timerNeverRuns struct {
	context.Context
	dl time.Time
}

func (c timerNeverRuns) Deadline() (time.Time, bool) { return c.dl, true }

// The first read of a new connection, which reads the handshake's replies
// sent ahead of rueidis' own (fencedConn.Read), fails as the dialing
// request's end when it times out at that request's deadline, before its
// context's timer ran: rueidis hands that error to the requests that
// waited for the set-up, which then make one of their own. Failed before
// the fix with "read tcp ...: i/o timeout".
func TestAHandshakeReadTimedOutAtItsDeadlineEndsAsItsContext(t *testing.T) {
	s := redlocktest.StartServer(t)
	s.Freeze() // accepts, answers nothing
	defer s.Thaw()
	ctx := timerNeverRuns{context.Background(), time.Now().Add(200 * time.Millisecond)}
	f := &connFence{}
	nc, err := f.wrap(nil)(ctx, s.Addr(), &net.Dialer{}, nil)
	if err != nil {
		t.Fatalf("the dial to a frozen server (which accepts): %v", err)
	}
	defer nc.Close()
	if _, err := nc.Read(make([]byte, 64)); err != context.DeadlineExceeded {
		t.Errorf("the first read past the request's deadline (its timer not run yet): %v, want context.DeadlineExceeded, the request's end", err)
	}
}

// TestRequestsThatBeginAsTheNodeClosesAreWaitedFor: a request on a node
// with no connection yet runs on a goroutine the node's Close waits for
// (calls). One that began while Close was already waiting added to the
// count from zero beside that Wait: the race detector reported it in a
// fresh-clone run (TestCloseDuringAcquisitions: "Previous read ... by
// (*settingUp).Do" against the write of the node's Close), and such a
// request could outlive Close. Each round starts requests and closes the
// node at once; under -race, a round where a request began beside Close's
// wait failed before the fix.
func TestRequestsThatBeginAsTheNodeClosesAreWaitedFor(t *testing.T) {
	s := redlocktest.StartServer(t)
	for range 40 {
		n, err := DialNode(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				c := n.conn(ctx)
				_ = c.Do(ctx, c.B().Ping().Build()).Error() // any end will do: the node closes
			})
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}

// A request on a node whose Close has ended runs on its caller's goroutine
// (inflight refuses it) and fails before its own deadline: the node's
// client and connections are closed.
func TestARequestAfterTheNodeClosedFailsAtOnce(t *testing.T) {
	s := redlocktest.StartServer(t)
	n, err := DialNode(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := n.conn(ctx)
	if err := c.Do(ctx, c.B().Ping().Build()).Error(); err == nil {
		t.Fatal("a PING on a closed node was answered")
	}
	if ctx.Err() != nil {
		t.Fatalf("the request on a closed node ended with its minute-long context (%v), not at once", ctx.Err())
	}
	if n.calls.add() {
		t.Fatal("a closed node still counts new requests")
	}
}
