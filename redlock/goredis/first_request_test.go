package goredis_test

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A new node's first acquisition goes in the round trip of its
// connection's handshake: a new client's first request over a node
// answering late is answered after one round trip, not two (the
// handshake's, then its own), so that a grant's patience (ttl/2) is not
// spent on making the connection (a new client over nodes 4 s late at
// ttl 10 s waited 8 s for its first answers, past the patience). A
// release still waits for the handshake's replies (who the connection
// is, for the fence), so that one left behind on a connection given up
// is closed by the next connection before it can run late.
func TestFirstAcquisitionRidesTheHandshake(t *testing.T) {
	const late = 3 * time.Second // each reply's delay: longer than the test's waits
	n, truth := lateNode(t, late)
	ctx := t.Context()
	actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := n.Acquire(actx, "first", "v", time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire over a node answering %v late = %v; want a deadline error", late, err)
	}
	// The server applies what it gets at once, and its answers wait in
	// the proxy.
	for end := time.Now().Add(late / 2); truth.Exists(ctx, "first").Val() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the server did not get a new node's first acquisition in %v: it waited for the handshake's answer (%v late)", late/2, late)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = n.Release(rctx, "first", "v")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Release over a node answering %v late = %v; want a deadline error", late, err)
	}
	if truth.Exists(ctx, "first").Val() != 1 {
		t.Error("a release went on a new connection before its handshake was answered (who the connection is, for the fence)")
	}
}
