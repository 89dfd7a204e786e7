package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
)

// stuckNode is a blocking Node (not an AsyncNode) whose Acquire waits for
// its context's end through a derived context, as a driver does, and
// records the error and cause it saw then and again later: the request
// context a fan gives it must behave as a context.WithDeadline of the
// caller's.
type stuckNode struct {
	mu   sync.Mutex
	seen []error // at Done, then again after the caller returned (check)
}

func (n *stuckNode) Acquire(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
	d, stop := context.WithCancel(ctx)
	defer stop()
	<-d.Done()
	n.mu.Lock()
	n.seen = append(n.seen, ctx.Err())
	n.mu.Unlock()
	go func() { // ask again a little later, from another goroutine
		time.Sleep(time.Second)
		n.mu.Lock()
		n.seen = append(n.seen, ctx.Err(), context.Cause(ctx))
		n.mu.Unlock()
	}()
	return false, ctx.Err()
}
func (*stuckNode) Release(context.Context, string, string) (bool, error) { return false, nil }
func (*stuckNode) Extend(context.Context, string, string, time.Duration) (bool, error) {
	return false, nil
}

// TestBlockingNodeSeesTheCallersEnd: a caller that cancels its context
// while every node blocks gets context.Canceled at once, each node's
// request context reports Canceled (and keeps reporting it, its cause
// too, after the caller's cancellation), and without the cancellation the
// nodes see DeadlineExceeded at the node timeout's limit. (A final review:
// held.)
func TestBlockingNodeSeesTheCallersEnd(t *testing.T) {
	for _, cancelled := range []bool{true, false} {
		name := map[bool]string{true: "cancelled", false: "deadline"}[cancelled]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stuck := []*stuckNode{{}, {}, {}}
				nodes := []redlock.Node{stuck[0], stuck[1], stuck[2]}
				c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(50*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if cancelled {
					time.AfterFunc(10*time.Millisecond, cancel)
				}
				start := time.Now()
				_, err = c.TryLock(ctx, "stuck")
				took := time.Since(start)
				want := context.DeadlineExceeded
				if cancelled {
					want = context.Canceled
					if !errors.Is(err, context.Canceled) || took != 10*time.Millisecond {
						t.Errorf("TryLock = %v after %v, want context.Canceled after 10ms", err, took)
					}
				} else if err == nil {
					t.Fatal("TryLock succeeded on nodes that never answer")
				}
				cancel()
				time.Sleep(2 * time.Second)
				synctest.Wait()
				for i, n := range stuck {
					n.mu.Lock()
					if len(n.seen) != 3 {
						t.Errorf("node %d: saw %v, want 3 errors", i, n.seen)
					}
					for _, e := range n.seen {
						if !errors.Is(e, want) {
							t.Errorf("node %d: its request context said %v, want %v every time: %v", i, e, want, n.seen)
						}
					}
					n.mu.Unlock()
				}
			})
		})
	}
}
