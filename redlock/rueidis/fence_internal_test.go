package rueidis

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"dlm/redlock/redlocktest"
	"dlm/redlock/redlocktest/faultconn"
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
		fault faultconn.Steps // of the connection that replaces the old one
		// dials: the replacing connection's dial succeeds (its
		// failure comes with its first read, that of its kills' replies).
		dials bool
	}{
		{"its handshake cannot be written", faultconn.Steps{FailWrite: 1}, false},
		{"its handshake is never answered", faultconn.Steps{FailReadsFrom: 1}, false},
		{"its kills cannot be written", faultconn.Steps{FailWrite: 2}, false},
		{"its kills are lost on the way and never answered", faultconn.Steps{DropFrom: 2, FailReadsFrom: 2}, true},
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
				return faultconn.WithSteps(nc, tc.fault), nil
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

// TestOverlappingSetUpsKeepWhatTheOtherDidNotClose: two connections set
// up through one fence while a connection is listed (the node's
// connection and a release subscription's, redialled after the same
// fault) both send its kill ahead; a connection given up between the
// reads of their kills' replies stays listed, and the next connection
// closes it. Failed before (the list dropped its first entries by count):
// "connection A (id 7), given up before the next connection, is still
// open on the node after its handshake".
func TestOverlappingSetUpsKeepWhatTheOtherDidNotClose(t *testing.T) {
	t.Parallel()
	s := redlocktest.StartServer(t)
	addr := s.Addr()
	f := &connFence{}
	dial := f.wrap(nil)
	old := pinged(t, dial, addr)
	defer old.Close()
	old.giveUp()

	// A and B dialled before either read its kills' replies.
	ncA, err := dial(t.Context(), addr, &net.Dialer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ncB, err := dial(t.Context(), addr, &net.Dialer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := ncA.(*fencedConn), ncB.(*fencedConn)
	defer a.Close()
	defer b.Close()
	ping := func(c *fencedConn) error {
		if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && line != "+PONG\r\n" {
			err = fmt.Errorf("PING answered %q", line)
		}
		return err
	}
	if err := ping(a); err != nil { // A's kills answered
		t.Fatal(err)
	}
	aID := a.who.Load().ID
	// A fails; its socket (and a request held back on it) stays.
	a.giveUp()
	// B's kills answered: they did not close A, which stays listed.
	if err := ping(b); err != nil {
		t.Fatal(err)
	}

	next := pinged(t, dial, addr)
	defer next.Close()
	if open := clientIDs(t, s); open[aID] {
		t.Errorf("connection A (id %d), given up before the next connection, is still open on the node after its handshake", aID)
	}
}
