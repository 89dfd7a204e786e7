package rueidis

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"dlm/redlock/redlocktest"
)

// TestAFenceKeepsWhatItDidNotClose: a connection given up stays on its
// fence's list until a later connection's kills reached the node and were
// answered, whatever step of a replacing connection fails: the next
// connection that comes through closes it on the node. The fence forgot
// it when a connection could not write its kills (the faulty link that
// made the client give the old one up fails again): the next connection
// found the list empty, and a request held back on the old connection (a
// delayed segment) ran on the node after the requests of the new one
// (TestWireFaults/delay-write: "key wire:delay-write:0 holds w7-19 after
// its round released it", once in a fresh-clone run).
func TestAFenceKeepsWhatItDidNotClose(t *testing.T) {
	t.Parallel()
	s := redlocktest.StartServer(t)
	addr := s.Addr()
	for _, tc := range []struct {
		name  string
		fault faults // of the connection that replaces the old one
		// dials: the replacing connection's dial succeeds (its
		// failure comes with its first read, that of its kills' replies).
		dials bool
	}{
		{"its handshake cannot be written", faults{failWrite: 1}, false},
		{"its handshake is never answered", faults{failReadsFrom: 1}, false},
		{"its kills cannot be written", faults{failWrite: 2}, false},
		{"its kills are lost on the way and never answered", faults{dropFrom: 2, failReadsFrom: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &connFence{}
			dial := f.wrap(nil)
			old := pinged(t, dial, addr)
			defer old.Close()
			oldID := old.who.Load().ID
			old.giveUp() // as a failed read or write does; its socket stays open
			if f.given.Empty() {
				t.Fatal("a given-up connection is not listed")
			}

			faulty := f.wrap(func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
				nc, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					return nil, err
				}
				return &faultyConn{Conn: nc, faults: tc.fault}, nil
			})
			nc, err := faulty(t.Context(), addr, &net.Dialer{}, nil)
			switch {
			case tc.dials && err == nil:
				if _, err := nc.Read(make([]byte, 1)); err == nil {
					t.Fatal("the first read of a connection whose kills were lost succeeded")
				}
				_ = nc.Close()
			case err == nil:
				_ = nc.Close()
				t.Fatal("the dial succeeded")
			case tc.dials:
				t.Fatalf("the dial failed: %v", err)
			}
			if f.given.Empty() {
				t.Error("after a replacing connection that closed nothing, the fence's list is empty: the given-up connection is forgotten")
			}

			next := pinged(t, dial, addr) // its first read reads its kills' replies
			defer next.Close()
			if open := clientIDs(t, s); open[oldID] {
				t.Errorf("the given-up connection (id %d) is still open on the node after the next connection's handshake", oldID)
			}
		})
	}
}

// pinged dials addr through dial, sends a PING and reads its answer: the
// connection's handshake sent ahead is answered, so it knows who it is.
func pinged(t *testing.T, dial dialFn, addr string) *fencedConn {
	t.Helper()
	nc, err := dial(t.Context(), addr, &net.Dialer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := nc.(*fencedConn)
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING on a fenced connection: %q, %v", line, err)
	}
	if c.who.Load() == nil {
		t.Fatal("the connection does not know who it is after its handshake")
	}
	return c
}

// clientIDs returns the ids of the connections open on s (CLIENT LIST).
func clientIDs(t *testing.T, s *redlocktest.Server) map[int64]bool {
	t.Helper()
	list, err := s.Client().ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int64]bool{}
	for line := range strings.Lines(list) {
		if id, err := strconv.ParseInt(clientFields(line)["id"], 10, 64); err == nil {
			ids[id] = true
		}
	}
	return ids
}

// faults are those of a faultyConn: its Writes fail from the failWrite-th
// on (0: never), are dropped while pretending success from the dropFrom-th
// on (0: never), and its Reads fail once failReadsFrom Writes were made
// (0: never).
type faults struct{ failWrite, dropFrom, failReadsFrom int32 }

// faultyConn is a connection with faults.
type faultyConn struct {
	net.Conn
	faults
	writes atomic.Int32
}

func (c *faultyConn) Write(b []byte) (int, error) {
	n := c.writes.Add(1)
	switch {
	case c.failWrite > 0 && n >= c.failWrite:
		return 0, errInjected
	case c.dropFrom > 0 && n >= c.dropFrom:
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *faultyConn) Read(b []byte) (int, error) {
	if c.failReadsFrom > 0 && c.writes.Load() >= c.failReadsFrom {
		return 0, errInjected
	}
	return c.Conn.Read(b)
}

var errInjected = errors.New("injected fault")
