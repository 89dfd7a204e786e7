package redlocktest_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// TestRefusingAddrStaysRefusing: the address RefusingAddr returns refuses
// connections, and no server started afterwards can take its port while
// the test runs: neither a Go listener nor a redis-server asked for that
// port. (Before, a test's "port where nothing listens" was a port found
// free and closed again; in a package run another test's redis-server was
// started on it, and dlm, told nothing listens there, met a server that
// did not answer its TLS handshake: TestSchemeMismatch/rediss,
// nothing listens failed.)
func TestRefusingAddrStaysRefusing(t *testing.T) {
	t.Parallel()
	addr := redlocktest.RefusingAddr(t)
	refused := func() {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("a connection to %s was accepted, want it refused", addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("a connection to %s: %v, want it refused", addr, err)
		}
	}
	refused()
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatalf("a listener took %s, want the port held", addr)
	}
	redlocktest.Require(t)
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if s, err := redisproc.Start(ctx, redisproc.Config{Port: port, Dir: t.TempDir()}); err == nil {
		s.Close()
		t.Fatalf("a redis-server started on %s, want the port held", addr)
	}
	refused()
}
