package tcp

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"dlm/byzantine"
)

// TestEvictionSparesHandshakeInProgress: a loyal peer has sent its hello
// and is in its handshake when a stranger opens MaxHandshakes idle
// connections; the stranger's connections are closed to make room, and
// the peer's handshake completes (regression: the oldest pending
// connection was closed at MaxHandshakes, the loyal one included, so a
// stranger's connection flood cut loyal links).
func TestEvictionSparesHandshakeInProgress(t *testing.T) {
	keys := newKeys(t, 2)
	n0 := listenAt(t, "127.0.0.1:0", 0, keys[0])
	c := clusterOf([]string{n0.Addr(), "127.0.0.1:1"}, keys)
	var run byzantine.RunID
	if err := n0.prepare(c, run); err != nil {
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
	hello := binary.BigEndian.AppendUint16([]byte{kindHello}, 1)
	if err := WriteFrame(conn, append(hello, nonceD...)); err != nil {
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
		return n0.inbound[1]
	})
	n0.mu.Lock()
	ok := n0.inbound[1]
	n0.mu.Unlock()
	if !ok {
		t.Fatalf("general 1's handshake, in progress when %d idle connections came, did not complete (refused %d)", MaxHandshakes+8, n0.Refused())
	}
}
