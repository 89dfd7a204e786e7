package rueidis

import (
	"context"
	"net"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
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
