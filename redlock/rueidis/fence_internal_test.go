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
// answered. A new connection whose kills could not be written (its write
// failed: the faulty link that made the client give the old one up fails
// again) is itself dropped, and the next connection must close the old
// one still. The fence forgot it instead: the next connection found the
// list empty, and a request held back on the old connection (a delayed
// segment) ran on the node after the requests of the new one
// (TestWireFaults/delay-write: "key wire:delay-write:0 holds w7-19 after
// its round released it", once in a fresh-clone run).
func TestAFenceKeepsWhatItDidNotClose(t *testing.T) {
	t.Parallel()
	s := redlocktest.StartServer(t)
	addr := s.Addr()
	f := &connFence{}
	dial := f.wrap(nil)

	old := pinged(t, dial, addr)
	oldID := old.who.Load().ID
	old.giveUp() // as a failed read or write does; its socket stays open
	if f.given.Empty() {
		t.Fatal("a given-up connection is not listed")
	}

	// The next connection's first write (its handshake) goes out, its
	// second (the kills) fails.
	failKills := f.wrap(func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &failingConn{Conn: nc, failFrom: 2}, nil
	})
	if nc, err := failKills(t.Context(), addr, &net.Dialer{}, nil); err == nil {
		_ = nc.Close()
		t.Fatal("a dial whose kills could not be written succeeded")
	}
	if f.given.Empty() {
		t.Error("after a connection whose kills were never sent, the fence's list is empty: the given-up connection is forgotten")
	}

	next := pinged(t, dial, addr) // its first read reads its kills' replies
	defer next.Close()
	if open := clientIDs(t, s); open[oldID] {
		t.Errorf("the given-up connection (id %d) is still open on the node after the next connection's handshake", oldID)
	}
	_ = old.Close()
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

// failingConn fails its Writes from the failFrom-th on.
type failingConn struct {
	net.Conn
	failFrom int32
	writes   atomic.Int32
}

func (c *failingConn) Write(b []byte) (int, error) {
	if c.writes.Add(1) >= c.failFrom {
		return 0, errInjectedWrite
	}
	return c.Conn.Write(b)
}

var errInjectedWrite = errors.New("injected write failure")
