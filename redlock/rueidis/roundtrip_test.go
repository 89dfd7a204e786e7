package rueidis_test

import (
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// TestNewConnectionAnswersInTwoRoundTrips: a new connection's handshakes,
// the fence's (who the connection is, the server's facts) and rueidis'
// own (HELLO), go in one round trip when there is no given-up connection
// to close, so a new node's first request is answered after two round
// trips, as over go-redis. It took three, so a new client never reached
// nodes answering more than a third of a grant's patience late (4 s at
// ttl 10 s: not granted within 40 s).
func TestNewConnectionAnswersInTwoRoundTrips(t *testing.T) {
	const slow = 800 * time.Millisecond
	s := redlocktest.StartServer(t)
	var delay atomic.Int64
	delay.Store(int64(slow))
	n, err := rueidis.DialNode("redis://" + redlocktest.DelayProxy(t, s.Addr(), &delay))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	start := time.Now()
	ok, err := n.Acquire(t.Context(), "k", "v", time.Minute)
	took := time.Since(start)
	if !ok || err != nil {
		t.Fatalf("Acquire over a new connection = %v, %v; want true", ok, err)
	}
	// Three round trips take 3 x slow at least; two, 2 x slow and the
	// machine's own time.
	if took >= 3*slow {
		t.Errorf("a new node's first request over a node answering %v late took %v: three round trips or more, want two", slow, took.Round(time.Millisecond))
	}
	if servers, _ := n.Facts(); len(servers) != 1 || servers[0].RunID == "" {
		t.Errorf("Facts after the first request = %+v; want the server's, read in the connection's handshake", servers)
	}
}
