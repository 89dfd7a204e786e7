package rueidis

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestConnectLeavesTheConnectionToTheRequestsThatJoinIt: rueidis makes one
// connection for all the requests that need it, bounded by the context of
// the one that started it. A Connect bounded shorter than the node's round
// trip (the client's facts reading) that started it failed a request that
// joined it and would have waited longer: a new client's first lock
// attempt over healthy slow nodes, patient for them, failed when the
// reading of the facts won the race to dial.
func TestConnectLeavesTheConnectionToTheRequestsThatJoinIt(t *testing.T) {
	const slow = 400 * time.Millisecond
	s := redlocktest.StartServer(t)
	var delay atomic.Int64
	delay.Store(int64(slow))
	n, err := DialNode("redis://" + redlocktest.DelayProxy(t, s.Addr(), &delay))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.AbortSetup()
		_ = n.Close()
	})
	ctx, cancel := context.WithTimeout(t.Context(), slow/2)
	defer cancel()
	connected := make(chan error, 1)
	go func() { connected <- n.Connect(ctx) }()
	// The Connect's connection is being made: the acquisition joins it.
	for deadline := time.Now().Add(10 * time.Second); n.setups.count() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Connect made no connection in 10s")
		}
	}
	start := time.Now()
	if ok, err := n.Acquire(t.Context(), "k", "v", time.Minute); !ok || err != nil {
		t.Errorf("Acquire, with no deadline, over a node answering %v late, joining the connection of a Connect bounded by %v = %v, %v after %v; want true",
			slow, slow/2, ok, err, time.Since(start).Round(time.Millisecond))
	}
	if err := <-connected; err == nil {
		t.Errorf("Connect bounded by %v over a node answering %v late = nil; want its context's error", slow/2, slow)
	}
}
