package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// lateNode is an in-memory node whose connection takes delay to make, as
// on a loaded machine, and reads its server's facts in its handshake, as
// the adapters do: it tells facts only once connected, and a request
// waits for the connection (begun by the first Connect or request, and
// made whatever the caller's context) before it is applied.
type lateNode struct {
	mem       *redlocktest.MemNode
	delay     time.Duration
	facts     adapter.Facts
	start     sync.Once
	connected chan struct{}
	version   atomic.Uint64
}

var _ adapter.FactsNode = (*lateNode)(nil)

func newLateNode(name string, delay time.Duration, f adapter.Facts) *lateNode {
	f.Addr = name
	return &lateNode{mem: redlocktest.NewMemNode(name), delay: delay, facts: f, connected: make(chan struct{})}
}

func (n *lateNode) String() string { return n.mem.String() }

func (n *lateNode) connect(ctx context.Context) error {
	n.start.Do(func() {
		go func() {
			time.Sleep(n.delay)
			n.version.Store(1)
			close(n.connected)
		}()
	})
	select {
	case <-n.connected:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *lateNode) Connect(ctx context.Context) error { return n.connect(ctx) }

func (n *lateNode) Facts() ([]adapter.Facts, uint64) {
	if v := n.version.Load(); v > 0 {
		return []adapter.Facts{n.facts}, v
	}
	return nil, 0
}

func (n *lateNode) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := n.connect(ctx); err != nil {
		return false, err
	}
	return n.mem.Acquire(ctx, key, value, ttl)
}

func (n *lateNode) Release(ctx context.Context, key, value string) (bool, error) {
	if err := n.connect(ctx); err != nil {
		return false, err
	}
	return n.mem.Release(ctx, key, value)
}

func (n *lateNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := n.connect(ctx); err != nil {
		return false, err
	}
	return n.mem.Extend(ctx, key, value, ttl)
}

// The first lock of a fresh client whose nodes connect only after the
// client's wait for their facts (four node timeouts) is still checked
// against what they advertise: its attempt made the connections, which
// read the facts first, and a lock over a node's max ttl is refused
// (ErrInvalid, the fix named, no key left behind); a ttl within it is
// granted on the same slow nodes, which are no error. In memory, under
// synctest.
// Failed before: "first lock with ttl 30s on nodes advertising 10s,
// connected after 450ms: granted; want ErrInvalid".
func TestFirstLockCheckedWhenNodesConnectLate(t *testing.T) {
	const nodeTO, delay = 100 * time.Millisecond, 450 * time.Millisecond // checkWait: 400ms
	for _, tt := range []struct {
		name    string
		ttl     time.Duration
		refused bool
	}{
		{"over the max ttl", 30 * time.Second, true},
		{"within the max ttl", 5 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var nodes []redlock.Node
				var lates []*lateNode
				for _, name := range []string{"a", "b", "c"} {
					n := newLateNode(name, delay, adapter.Facts{RunID: "run-" + name, MaxTTL: 10 * time.Second})
					nodes, lates = append(nodes, n), append(lates, n)
				}
				c, err := redlock.New(nodes, redlock.WithTTL(tt.ttl), redlock.WithNodeTimeout(nodeTO))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l, err := c.TryLock(t.Context(), "r")
				switch {
				case tt.refused && !errors.Is(err, redlock.ErrInvalid):
					t.Fatalf("first lock with ttl %v on nodes advertising 10s, connected after %v: %v, %v; want ErrInvalid", tt.ttl, delay, l, err)
				case tt.refused:
					for _, want := range []string{"max ttl 10s", "dlm node --max-ttl"} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error %q does not say %q", err, want)
						}
					}
					synctest.Wait()
					for _, n := range lates {
						if v, ok, _ := n.mem.Value(context.Background(), "dlm:lock:r"); ok {
							t.Errorf("node %s keeps the refused lock's key (%d bytes)", n, len(v))
						}
					}
				case err != nil:
					t.Fatalf("first lock with ttl %v within the max ttl on slow nodes: %v", tt.ttl, err)
				default:
					if err := l.Unlock(t.Context()); err != nil {
						t.Errorf("Unlock: %v", err)
					}
				}
			})
		})
	}
}
