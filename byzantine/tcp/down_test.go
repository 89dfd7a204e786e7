package tcp

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestDownPeer: a peer whose address refuses connections (its process is
// gone) is down; a peer linked to this node is not, and neither is one
// whose listener is up but whose handshake has not finished.
func TestDownPeer(t *testing.T) {
	keys := newKeys(t, 3)
	n0 := listenAt(t, "127.0.0.1:0", 0, keys[0])
	n1 := listenAt(t, "127.0.0.1:0", 1, keys[1])
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := gone.Addr().String()
	gone.Close() // nothing listens there any more
	c := clusterOf([]string{n0.Addr(), n1.Addr(), goneAddr}, keys)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- n0.Start(ctx, c, Terms{}) }()
	go func() { errc <- n1.Start(ctx, c, Terms{}) }()
	waitFor(t, 15*time.Second, func() bool { return n0.Down(2) && n0.Linked(1) })
	if !n0.Down(2) {
		t.Errorf("general 2, whose address refuses connections: Down = false, want true")
	}
	if n0.Down(1) {
		t.Errorf("general 1, linked: Down = true, want false")
	}
	cancel()
	<-errc
	<-errc
}
