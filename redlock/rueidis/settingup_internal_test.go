package rueidis

import (
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
	// A port that refuses connections: nothing listens there any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	_ = ln.Close()
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
