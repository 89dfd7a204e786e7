package goredis_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// A node that answers late (a healthy server behind a slow link) gets a
// request as soon as it is made, not after the deadline of a request
// before it that timed out: the node's worker wrote a batch and waited
// for its replies or its deadline before it wrote the next one, so a new
// client's next attempt waited behind its last attempt's release for the
// release's whole deadline, and over nodes 4 s late at ttl 10 s it was
// never granted (its acquisitions reached them too late every time).
func TestRequestIsNotHeldBehindOneTimedOutOnASlowNode(t *testing.T) {
	const late = time.Second // each reply's delay
	n, truth := lateNode(t, late)
	ctx := t.Context()
	// Connected: a handshake and a request, a round trip each.
	if ok, err := n.Acquire(ctx, "first", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire(first) = %v, %v; want true", ok, err)
	}
	// A request that times out: the connection waits for its reply.
	actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := n.Acquire(actx, "timed-out", "v", time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire(timed-out) over a node %v late = %v; want a deadline error", late, err)
	}
	// A release whose deadline passes before its reply comes, and an
	// acquisition made while it waits.
	released := make(chan error, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, late*4/5)
		defer cancel()
		_, err := n.Release(rctx, "first", "v")
		released <- err
	}()
	// The release reached the server: it applies a request at once.
	for truth.Exists(ctx, "first").Val() == 1 {
		select {
		case err := <-released:
			t.Fatalf("Release(first) = %v before it reached the server", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	acquired := make(chan error, 1)
	go func() {
		_, err := n.Acquire(ctx, "next", "v", time.Minute)
		acquired <- err
	}()
	// The acquisition reaches the server while the release still waits.
	start := time.Now()
	for {
		if truth.Exists(ctx, "next").Val() == 1 {
			break
		}
		select {
		case err := <-released:
			t.Fatalf("the server got no acquisition made beside a release in the %v the release waited (%v), before its deadline: it was held behind the release", time.Since(start).Round(time.Millisecond), err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := <-acquired; err != nil {
		t.Errorf("Acquire(next) = %v", err)
	}
	<-released
}

// lateNode starts a redis-server and dials a node to it through a proxy
// that delays each reply by late (none when late is 0); truth is a client
// of the server itself, to read what it holds. Both close with the test.
func lateNode(t *testing.T, late time.Duration) (n *goredis.Node, truth *redis.Client) {
	t.Helper()
	s := redlocktest.StartServer(t)
	url := s.URL()
	if late > 0 {
		var delay atomic.Int64
		delay.Store(int64(late))
		url = "redis://" + redlocktest.DelayProxy(t, s.Addr(), &delay)
	}
	n, err := goredis.DialNode(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	truth = redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = truth.Close() })
	return n, truth
}
