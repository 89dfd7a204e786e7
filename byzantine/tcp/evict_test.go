package tcp

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"testing"
	"time"

	"dlm/byzantine"
)

// TestEvictionSparesHandshakeInProgress: a loyal peer has sent its hello
// and is in its handshake when a stranger opens MaxHandshakes+8
// connections that stall; the stranger's connections above the bound are
// refused, and the peer's handshake completes (regression: the oldest pending
// connection was closed at MaxHandshakes, the loyal one included, so a
// stranger's connection flood cut loyal links).
func TestEvictionSparesHandshakeInProgress(t *testing.T) {
	keys := newKeys(t, 2)
	n0 := listenAt(t, "127.0.0.1:0", 0, keys[0])
	c := clusterOf([]string{n0.Addr(), "127.0.0.1:1"}, keys)
	var run byzantine.RunID
	if err := n0.prepare(c, run, Terms{}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", n0.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	nonceD := make([]byte, nonceSize)
	rand.Read(nonceD)
	if err := WriteFrame(conn, helloFrame(keys[1], run, Terms{}, nonceD, 1, 0)); err != nil {
		t.Fatal(err)
	}
	reply, err := ReadFrame(conn, helloMax)
	if err != nil {
		t.Fatal(err)
	}
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range MaxHandshakes + 8 {
		c, err := net.Dial("tcp", n0.Addr())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
		// The first byte of a hello, and no more: a connection that
		// sends nothing is not even handed to the general.
		if _, err := c.Write([]byte{0}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, func() bool { return n0.Refused() >= 8 })
	nonceL := reply[3 : 3+nonceSize]
	sig := ed25519.Sign(keys[1], transcript("dial", run, nonceL, 1, 0))
	if err := WriteFrame(conn, append([]byte{kindHello}, sig...)); err != nil {
		t.Fatalf("the handshake in progress was cut: %v", err)
	}
	waitFor(t, 10*time.Second, func() bool {
		n0.mu.Lock()
		defer n0.mu.Unlock()
		return n0.inbound[1] != nil
	})
	n0.mu.Lock()
	ok := n0.inbound[1] != nil
	n0.mu.Unlock()
	if !ok {
		t.Fatalf("general 1's handshake, in progress when %d idle connections came, did not complete (refused %d)", MaxHandshakes+8, n0.Refused())
	}
}

// TestUnprovenHelloEarnsNoSlot: connections that send a well-formed but
// unsigned hello are evicted, whatever their age, before any connection
// whose dialer proved its identity; and a signed hello sent again with
// the same nonce (a replay) is refused (regression: a syntactically
// valid hello spared its connection for HandshakeGrace before any proof,
// so a keyless stranger sending fresh hellos held every slot).
func TestUnprovenHelloEarnsNoSlot(t *testing.T) {
	keys := newKeys(t, 2)
	n0 := listenAt(t, "127.0.0.1:0", 0, keys[0])
	c := clusterOf([]string{n0.Addr(), "127.0.0.1:1"}, keys)
	var run byzantine.RunID
	if err := n0.prepare(c, run, Terms{}); err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", n0.Addr())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		conns = append(conns, conn)
		return conn
	}
	pendingOf := func(f func(*pendingConn) bool) int {
		n0.mu.Lock()
		defer n0.mu.Unlock()
		k := 0
		for _, p := range n0.pending {
			if f(p) {
				k++
			}
		}
		return k
	}
	// Unsigned hellos of the right size: the stranger has no key.
	for range MaxHandshakes {
		conn := dial()
		if err := WriteFrame(conn, make([]byte, helloSize)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, func() bool { return n0.Refused() >= MaxHandshakes })
	// A stranger's connections that only stall (sent the first byte of a
	// hello: one that sends nothing is not handed to the general) fill
	// the slots.
	stall := func() {
		if _, err := dial().Write([]byte{0}); err != nil {
			t.Fatal(err)
		}
	}
	for range MaxHandshakes {
		stall()
	}
	waitFor(t, 10*time.Second, func() bool { return pendingOf(func(*pendingConn) bool { return true }) == MaxHandshakes })
	// General 1 proves itself; then younger strangers come.
	nonceD := make([]byte, nonceSize)
	rand.Read(nonceD)
	loyal := dial()
	if err := WriteFrame(loyal, helloFrame(keys[1], run, Terms{}, nonceD, 1, 0)); err != nil {
		t.Fatal(err)
	}
	reply, err := ReadFrame(loyal, helloMax)
	if err != nil {
		t.Fatalf("general 1's signed hello got no answer: %v", err)
	}
	before := n0.Refused()
	for range 2 * MaxHandshakes {
		stall()
	}
	waitFor(t, 10*time.Second, func() bool { return n0.Refused() >= before+2*MaxHandshakes })
	if got := pendingOf(func(p *pendingConn) bool { return p.proven && p.peer == 1 }); got != 1 {
		t.Fatalf("general 1's proven handshake was evicted by %d younger strangers' connections", 2*MaxHandshakes)
	}
	// A replay of general 1's hello is refused at once.
	replay := dial()
	before = n0.Refused()
	if err := WriteFrame(replay, helloFrame(keys[1], run, Terms{}, nonceD, 1, 0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return n0.Refused() > before })
	if got := pendingOf(func(p *pendingConn) bool { return p.proven }); got != 1 {
		t.Fatalf("%d proven handshakes after a replayed hello, want 1", got)
	}
	sig := ed25519.Sign(keys[1], transcript("dial", run, reply[3:3+nonceSize], 1, 0))
	if err := WriteFrame(loyal, append([]byte{kindHello}, sig...)); err != nil {
		t.Fatal(err)
	}
	linked := func() bool {
		n0.mu.Lock()
		defer n0.mu.Unlock()
		return n0.inbound[1] != nil
	}
	waitFor(t, 10*time.Second, linked)
	if !linked() {
		t.Fatalf("general 1's handshake did not complete (refused %d)", n0.Refused())
	}
}
