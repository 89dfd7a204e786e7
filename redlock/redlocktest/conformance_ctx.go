package redlocktest

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// HungNodeDialer returns a node, not yet connected, over the server at
// addr (host:port, no password); the check closes it.
type HungNodeDialer func(t *testing.T, addr string) adapter.Node

// The bounds of RunEndsWithContext: each request's context, and how long
// after it ended the request may take to return (generous: a loaded
// machine).
const (
	hungRequestTimeout = 150 * time.Millisecond
	hungReturnBound    = 3 * time.Second
)

// RunEndsWithContext checks that every request of a node ends soon after
// its context ends while the node's connection is still being made, to a
// server that accepts connections and never answers (a stopped process):
// a request that joins a connection set-up started by another, longer
// request (the client's Connect, say) returns at its own context's end,
// not the set-up's. The core waits for each request it sent to return,
// so a request that outlives its context holds the whole operation. Each
// method the node has (Node, InspectNode, FencingNode, TransferNode,
// HandoffNode, FactsNode) is one subtest, on a node of its own.
func RunEndsWithContext(t *testing.T, dial HungNodeDialer) {
	type call = func(ctx context.Context, n adapter.Node) error
	const key, value, ttl = "ctx:k", "v", 10 * time.Second
	rows := []struct {
		name string
		call call
	}{
		{"Acquire", func(ctx context.Context, n adapter.Node) error {
			_, err := n.Acquire(ctx, key, value, ttl)
			return err
		}},
		{"Release", func(ctx context.Context, n adapter.Node) error {
			_, err := n.Release(ctx, key, value)
			return err
		}},
		{"Extend", func(ctx context.Context, n adapter.Node) error {
			_, err := n.Extend(ctx, key, value, ttl)
			return err
		}},
		{"Inspect", func(ctx context.Context, n adapter.Node) error {
			_, err := n.(adapter.InspectNode).Inspect(ctx, key)
			return err
		}},
		{"Scan", func(ctx context.Context, n adapter.Node) error {
			_, _, err := n.(adapter.InspectNode).Scan(ctx, "ctx:", "", 10)
			return err
		}},
		{"PutNote", func(ctx context.Context, n adapter.Node) error {
			return n.(adapter.InspectNode).PutNote(ctx, key, value, ttl)
		}},
		{"Note", func(ctx context.Context, n adapter.Node) error {
			_, _, err := n.(adapter.InspectNode).Note(ctx, key)
			return err
		}},
		{"AcquireFenced", func(ctx context.Context, n adapter.Node) error {
			_, _, err := n.(adapter.FencingNode).AcquireFenced(ctx, key, "ctx:f", value, ttl)
			return err
		}},
		{"RaiseFence", func(ctx context.Context, n adapter.Node) error {
			_, err := n.(adapter.FencingNode).RaiseFence(ctx, key, "ctx:f", value, 1, ttl)
			return err
		}},
		{"Transfer", func(ctx context.Context, n adapter.Node) error {
			_, err := n.(adapter.TransferNode).Transfer(ctx, key, "old", value, ttl)
			return err
		}},
		{"ReleaseAnnounce", func(ctx context.Context, n adapter.Node) error {
			_, err := n.(adapter.HandoffNode).ReleaseAnnounce(ctx, key, value)
			return err
		}},
		{"Connect", func(ctx context.Context, n adapter.Node) error {
			return n.(adapter.FactsNode).Connect(ctx)
		}},
	}
	has := map[string]func(adapter.Node) bool{
		"Inspect": isA[adapter.InspectNode], "Scan": isA[adapter.InspectNode],
		"PutNote": isA[adapter.InspectNode], "Note": isA[adapter.InspectNode],
		"AcquireFenced": isA[adapter.FencingNode], "RaiseFence": isA[adapter.FencingNode],
		"Transfer": isA[adapter.TransferNode], "ReleaseAnnounce": isA[adapter.HandoffNode],
		"Connect": isA[adapter.FactsNode],
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			addr := hungListener(t)
			n := dial(t, addr.String())
			if ok := has[row.name]; ok != nil && !ok(n) {
				t.Skipf("the node has no %s", row.name)
			}
			// A longer request starts the connection's set-up first.
			long, cancelLong := context.WithTimeout(t.Context(), time.Minute)
			defer cancelLong()
			var wg sync.WaitGroup
			wg.Go(func() { _, _ = n.Acquire(long, "ctx:first", value, ttl) })
			defer wg.Wait()
			defer cancelLong()
			defer closeHung(n)
			select {
			case <-addr.accepted:
			case <-time.After(time.Minute):
				t.Fatal("the node never dialled the server")
			}
			ctx, cancel := context.WithTimeout(t.Context(), hungRequestTimeout)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- row.call(ctx, n) }()
			<-ctx.Done()
			ended := time.Now()
			select {
			case err := <-done:
				var timeout interface{ Timeout() bool }
				if !errors.Is(err, context.DeadlineExceeded) && (!errors.As(err, &timeout) || !timeout.Timeout()) {
					t.Fatalf("%s over a server that never answers = %v; want a timeout (its context's %v, or a network timeout)", row.name, err, context.DeadlineExceeded)
				}
			case <-time.After(hungReturnBound):
				t.Fatalf("%s still running %v after its context (%v) ended, while the node's connection is being made: a request must end with its context", row.name, time.Since(ended).Round(time.Millisecond), hungRequestTimeout)
			}
		})
	}
}

// isA reports whether n is a T.
func isA[T any](n adapter.Node) bool {
	_, ok := n.(T)
	return ok
}

// closeHung closes n if it can be closed.
func closeHung(n adapter.Node) {
	if c, ok := n.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// hungAddr is a server that accepts connections and never answers:
// accepted gets one value per connection accepted (dropped when full).
type hungAddr struct {
	net.Addr
	accepted chan struct{}
}

// hungListener starts a loopback listener that accepts connections, reads
// nothing and answers nothing, until t ends.
func hungListener(t *testing.T) hungAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	a := hungAddr{Addr: ln.Addr(), accepted: make(chan struct{}, 64)}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("accept: %v", err)
				}
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case a.accepted <- struct{}{}:
			default:
			}
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return a
}
