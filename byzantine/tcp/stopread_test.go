package tcp

import (
	"context"
	"crypto/ed25519"
	"net"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
)

// serveDeaf listens on ln as general id, completes the handshake of
// whoever dials it, and then never reads again (a traitor that stops
// reading), until the test ends.
func serveDeaf(t *testing.T, ln net.Listener, id byzantine.ID, priv ed25519.PrivateKey, run byzantine.RunID) {
	done := make(chan struct{})
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn)
			mu.Unlock()
			go AnswerHandshake(conn, id, priv, run) // then nothing more is read
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
}

// TestPeerThatStopsReadingCostsNoSend: general 1 completes its handshake
// and then stops reading. Sending it far more than the kernel buffers,
// and then a message to general 2, takes the sender well under the write
// timeout (regression: writes were made by the sending general itself, so
// once the buffers were full a send waited the whole 5 s write timeout
// before it failed, and every peer's messages waited with it).
func TestPeerThatStopsReadingCostsNoSend(t *testing.T) {
	keys := newKeys(t, 3)
	var terms Terms
	n0 := listenAt(t, "127.0.0.1:0", 0, keys[0])
	n2 := listenAt(t, "127.0.0.1:0", 2, keys[2])
	deaf, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := clusterOf([]string{n0.Addr(), deaf.Addr().String(), n2.Addr()}, keys)
	serveDeaf(t, deaf, 1, keys[1], RunID(c, terms))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- n2.Start(ctx, c, terms) }()
	if err := n0.Start(ctx, c, terms); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil && !n2.Linked(0) {
		t.Fatal(err)
	}
	big := byzantine.Message{To: 1, Round: 0, Order: byzantine.Order(make([]byte, byzantine.MaxOrderLen)), Path: []byzantine.ID{0}}
	payload, err := big.AppendBinary([]byte{kindMessage})
	if err != nil {
		t.Fatal(err)
	}
	const burst = 6 << 20 // more than the kernel buffers of a peer that reads nothing
	began := time.Now()
	for sent := 0; sent < burst; sent += len(payload) {
		if err := n0.SendRaw(1, payload); err != nil {
			break // the link was cut: also no further wait
		}
	}
	if err := n0.Send(ctx, byzantine.Message{To: 2, Round: 0, Order: byzantine.Attack, Path: []byzantine.ID{0}}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	ev, err := n2.Recv(ctx)
	if err != nil || ev.Message == nil {
		t.Fatalf("general 2: Recv = %+v, %v; want general 0's message", ev, err)
	}
	if took > writeTimeout/2 {
		t.Errorf("sending %d MB to a peer that stopped reading, then one message to another, took %v; want well under the %v write timeout", burst>>20, took, writeTimeout)
	}
}
