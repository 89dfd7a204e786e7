package tcp

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestDownPeer: a peer whose address refuses connections (its process is
// gone) is down; a peer linked to this node is not.
func TestDownPeer(t *testing.T) {
	keys := newKeys(t, 3)
	n0 := listenAt(t, "127.0.0.1:0", 0, keys[0])
	n1 := listenAt(t, "127.0.0.1:0", 1, keys[1])
	goneAddr := refusingAddr(t)
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

// TestOtherTermsPeerIsDown: a peer that proved it runs this run's start
// and sequence number with other terms takes no part in the run: it is
// down, although it listens. One of another sequence number is not (its
// hello could be a replay of an earlier run's).
func TestOtherTermsPeerIsDown(t *testing.T) {
	n0, stop := startPair(t, Terms{Seq: 1}, Terms{Seq: 1, MaxTraitors: 2})
	defer stop()
	waitFor(t, 15*time.Second, func() bool { return n0.Down(1) })
	if !n0.Down(1) {
		t.Errorf("general 1, which runs with another -m: Down = false, want true")
	}
}

// startPair starts two listening generals, 0 with terms t0 and 1 with t1,
// and returns general 0 and a stop that ends both and waits for them.
func startPair(t *testing.T, t0, t1 Terms) (*Node, func()) {
	keys := newKeys(t, 2)
	n0 := listenAt(t, "127.0.0.1:0", 0, keys[0])
	n1 := listenAt(t, "127.0.0.1:0", 1, keys[1])
	c := clusterOf([]string{n0.Addr(), n1.Addr()}, keys)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	errc := make(chan error, 2)
	go func() { errc <- n0.Start(ctx, c, t0) }()
	go func() { errc <- n1.Start(ctx, c, t1) }()
	return n0, func() {
		cancel()
		<-errc
		<-errc
	}
}

// TestOtherSeqPeerIsNotDown: a peer whose hello is of another sequence
// number is not down on that account.
func TestOtherSeqPeerIsNotDown(t *testing.T) {
	n0, stop := startPair(t, Terms{Seq: 1}, Terms{Seq: 2})
	defer stop()
	waitFor(t, 15*time.Second, func() bool { return len(n0.OtherTerms()[1]) > 0 })
	if n0.Down(1) {
		t.Errorf("general 1, whose hello is of another --seq: Down = true, want false")
	}
}

// refusingAddr returns a loopback address that refuses connections until
// t ends: its port is held by a socket bound to it that never listens
// (without SO_REUSEADDR, so no other socket binds it). A port listened on
// and closed again could be given to another test's listener meanwhile,
// which would then answer there.
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
