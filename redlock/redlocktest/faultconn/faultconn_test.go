package faultconn_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"dlm/redlock/redlocktest/faultconn"
)

func TestParseFaults(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"all", len(faultconn.AllFaults()), false},
		{"", len(faultconn.AllFaults()), false},
		{"fail-write", 1, false},
		{"close-mid-batch, stall-reader", 2, false},
		{"fail-write,nonsense", 0, true},
	}
	for _, tt := range tests {
		got, err := faultconn.ParseFaults(tt.in)
		if (err != nil) != tt.wantErr || len(got) != tt.want {
			t.Errorf("ParseFaults(%q) = %v, %v; want %d faults, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// pair returns the two ends of a loopback TCP connection, the client's
// dialled by dial.
func pair(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	client, err = dial(t.Context(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// At a rate of 1, every Write of a connection that only fails writes
// fails with ErrInjected and sends nothing, and the faults are counted.
func TestFailWriteAtRateOne(t *testing.T) {
	in := faultconn.New(faultconn.Config{Seed: 1, Rate: 1, Faults: []faultconn.Fault{faultconn.FailWrite}})
	client, server := pair(t, in.Dial)
	t.Cleanup(in.Wait)
	for range 3 {
		if _, err := client.Write([]byte("PING\r\n")); !errors.Is(err, faultconn.ErrInjected) {
			t.Fatalf("Write = %v; want ErrInjected", err)
		}
	}
	if got := in.Counts()[faultconn.FailWrite]; got != 3 {
		t.Errorf("fail-write count = %d, want 3", got)
	}
	in.SetEnabled(false)
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatalf("Write with faults off = %v", err)
	}
	buf := make([]byte, 8)
	if n, err := server.Read(buf); n != 1 || err != nil {
		t.Errorf("server read %d bytes, %v; want only the 1 byte written with faults off", n, err)
	}
}

// A HoldConn keeps its bytes until Release, in order, and a Close in
// between waits for them.
func TestHoldConnDelaysBytesAndClose(t *testing.T) {
	d := &faultconn.HoldDialer{}
	nc, server := pair(t, d.Dial)
	c := d.Conns()[0]
	c.Hold()
	for _, s := range []string{"ab", "cd"} {
		if _, err := nc.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Close(); err != nil { // held bytes: closes after Release
		t.Fatal(err)
	}
	if got := c.HeldWrites(); got != 2 {
		t.Errorf("HeldWrites = %d, want 2", got)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(server)
	if string(got) != "abcd" || err != nil {
		t.Errorf("server read %q, %v; want %q then the close", got, err, "abcd")
	}
}
