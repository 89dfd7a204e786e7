package faultconn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
)

// LateRelease is the scenario of a request left behind on a connection the
// client gave up, for an adapter's test: n is a node whose connections d
// dialled (its first connection live and idle), truth a client of the same
// node. Attempt 1's release of a value is on its way on connection 1 (held
// back) when a write fails and the adapter gives connection 1 up; attempt
// 2 acquires the same value (as WithValue retries) over a new connection;
// then the late release reaches the node, unless the node closed
// connection 1 first. It fails t unless the node still holds attempt 2's
// key once connection 1 is gone from the node.
func LateRelease(t *testing.T, n adapter.Node, d *HoldDialer, truth *redis.Client) {
	t.Helper()
	LateReleaseOver(t, n, d, d.Conns()[0], "late", truth)
}

// LateReleaseOver is LateRelease with the connection that carries the
// node's requests named (c1, one of d's: a cluster client dials others,
// to learn the slots, before it) and the key the scenario locks (a key of
// c1's master, on a cluster node).
func LateReleaseOver(t *testing.T, n adapter.Node, d *HoldDialer, c1 *HoldConn, key string, truth *redis.Client) {
	t.Helper()
	ctx := t.Context()
	const value = "attempt-value"
	c1.Hold()
	rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := n.Release(rctx, key, value) // attempt 1's release, on its way
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held Release = %v; want a deadline error", err)
	}
	c1.FailWrites(true)
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = n.Acquire(actx, "other", "v", time.Minute)
	cancel()
	// A node may meet the failed write first with a request of its own
	// (a cluster node reads the slot map after a timeout) and answer this
	// one over a new connection.
	if err == nil && d.Conns()[len(d.Conns())-1] == c1 {
		t.Fatal("Acquire over a failed write: want an error")
	}
	// Attempt 2, over connection 2 (an adapter may need a moment to see
	// connection 1 fail).
	ok := false
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		ok, err = n.Acquire(actx, key, value, time.Minute)
		cancel()
		if err == nil {
			break
		}
	}
	if !ok || err != nil || d.Conns()[len(d.Conns())-1] == c1 {
		t.Fatalf("Acquire(%s) = %v, %v over %d connections; want true over a second one", key, ok, err, len(d.Conns()))
	}
	_ = c1.Release() // the late release, then connection 1's end
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := WaitGone(wctx, truth, c1); err != nil {
		t.Fatal(err)
	}
	held, err := truth.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if held != value {
		t.Errorf("the node holds %q under %s after attempt 2 acquired it; want %q (attempt 1's late release deleted it)", held, key, value)
	}
}
