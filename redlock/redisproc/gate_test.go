package redisproc_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"dlm/redlock/redisproc"
)

// A Gate forwards every source's bytes, holds back those of a held source
// (both ways, the connection staying open) while the others still pass,
// and on Release closes the held connections and lets new ones through.
func TestGateHoldsOneSource(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	g, err := redisproc.StartGate(echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	dial := func(src string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", g.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// roundTrip sends a line and reads the echo, within d.
	roundTrip := func(c net.Conn, d time.Duration) error {
		if err := c.SetDeadline(time.Now().Add(d)); err != nil {
			return err
		}
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && line != "ping\n" {
			err = errors.New("echo " + line)
		}
		return err
	}
	cut, other := dial("127.0.1.7"), dial("127.0.1.8")
	for _, c := range []net.Conn{cut, other} {
		if err := roundTrip(c, 5*time.Second); err != nil {
			t.Fatalf("before the hold, from %s: %v", c.LocalAddr(), err)
		}
	}
	g.Hold("127.0.1.7")
	if err := roundTrip(cut, 300*time.Millisecond); err == nil {
		t.Fatal("a held source's request was answered")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("a held source's connection = %v; want it open and silent (a timeout)", err)
	}
	if err := roundTrip(dial("127.0.1.7"), 300*time.Millisecond); err == nil {
		t.Fatal("a new connection from the held source was answered")
	}
	if err := roundTrip(other, 5*time.Second); err != nil {
		t.Fatalf("another source during the hold: %v", err)
	}
	g.Release("127.0.1.7")
	if err := roundTrip(cut, 5*time.Second); err == nil {
		t.Fatal("a connection held until the release still carries bytes; want it closed")
	}
	if err := roundTrip(dial("127.0.1.7"), 5*time.Second); err != nil {
		t.Fatalf("a new connection from the released source: %v", err)
	}
}
