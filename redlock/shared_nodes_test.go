package redlock_test

import (
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// The same nodes given to two clients, one WithFencing (an election) and
// one plain (fencing is a client option, so an application that elects a
// leader and takes plain locks has two): closing one client leaves the
// other working, and the nodes close with the last client, over every
// adapter, whether the node dialled its own client or wraps the caller's.
func TestSharedNodesCloseWithTheLastClient(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	tests := []struct {
		name string
		node func(t *testing.T, s *redlocktest.Server) redlock.Node
		// closes: the node closes what a later request needs (its own
		// client or connection), so that one fails after the last Close.
		closes bool
	}{
		{"goredis DialNode", func(t *testing.T, s *redlocktest.Server) redlock.Node {
			n, err := goredis.DialNode(s.URL())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}, true},
		{"goredis NewNode", func(t *testing.T, s *redlocktest.Server) redlock.Node {
			rc := goredis.NewClient(parseURL(t, s.URL()))
			t.Cleanup(func() { _ = rc.Close() })
			return goredis.NewNode(rc, s.Addr())
		}, true},
		{"rueidis DialNode", func(t *testing.T, s *redlocktest.Server) redlock.Node {
			n, err := rueidis.DialNode(s.URL())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}, true},
		{"rueidis NewNode", func(t *testing.T, s *redlocktest.Server) redlock.Node {
			rc, err := rueidis.NewClient(parseURL(t, s.URL()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rc.Close)
			return rueidis.NewNode(rc, s.Addr())
		}, false}, // the caller's client is the caller's to close
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := make([]redlock.Node, len(cl.Servers))
			for i, s := range cl.Servers {
				nodes[i] = tt.node(t, s)
			}
			opts := []redlock.Option{redlock.WithNodeTimeout(time.Second)}
			fenced, err := redlock.New(nodes, append(opts, redlock.WithFencing())...)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := redlock.New(nodes, opts...)
			if err != nil {
				t.Fatal(err)
			}
			resource := "shared " + tt.name
			lockUnlock(t, plain, resource, "before the other client's Close")
			if err := fenced.Close(); err != nil {
				t.Errorf("the fenced client's Close: %v", err)
			}
			lockUnlock(t, plain, resource, "after the other client over the same nodes closed")
			if err := plain.Close(); err != nil {
				t.Errorf("the last client's Close: %v", err)
			}
			if _, err := nodes[0].Acquire(t.Context(), "shared after close", "v", time.Second); tt.closes && err == nil {
				t.Errorf("a node's Acquire after the last client's Close succeeded; want the node closed")
			}
		})
	}
}

// lockUnlock takes resource with c and releases it; when says when, in
// the failure.
func lockUnlock(t *testing.T, c *redlock.Client, resource, when string) {
	t.Helper()
	l, err := c.TryLock(t.Context(), resource)
	if err != nil {
		t.Errorf("%s: TryLock = %v", when, err)
		return
	}
	if err := l.Unlock(t.Context()); err != nil {
		t.Errorf("%s: Unlock = %v", when, err)
	}
}

// parseURL parses a node URL of the test's servers.
func parseURL(t *testing.T, url string) redlock.NodeURL {
	t.Helper()
	u, err := redlock.ParseNodeURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
