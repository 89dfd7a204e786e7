package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Healthy nodes that all answer late, as on a machine whose cores are busy,
// are not failed nodes: the node timeout follows the round trips the client
// sees (timeout.go). On a fixed 50 ms node timeout, every one of these pairs
// failed (ErrNotAcquired: every node timed out).
func TestLoadedNodesAreNotFailed(t *testing.T) {
	const nt = 50 * time.Millisecond
	tests := []struct {
		name string
		// warm: pairs at full speed before the nodes slow down.
		warm     int
		slow     time.Duration
		pairs    int
		wantFail int // TryLocks that fail, all at the start
	}{
		{"a new client on loaded nodes", 0, 3 * nt, 20, 0},
		{"a new client on very loaded nodes", 0, 9 * nt, 20, 0},
		// The nodes answered the warm pairs within the limit: busy, not
		// failed (without that rule: two failures, then doublings).
		{"load that rises at once", 5, 3 * nt, 20, 0},
		{"nodes a little slower than the node timeout", 5, nt + nt/2, 20, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				c, err := redlock.New(nodes, redlock.WithNodeTimeout(nt), redlock.WithTTL(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				pair := func() error {
					l, err := c.TryLock(t.Context(), "r")
					if err != nil {
						return err
					}
					return l.Unlock(t.Context())
				}
				for range tt.warm {
					if err := pair(); err != nil {
						t.Fatal(err)
					}
				}
				for _, m := range mems {
					m.SetSlow(tt.slow)
				}
				var fails []int
				for i := range tt.pairs {
					if err := pair(); err != nil {
						if !errors.Is(err, redlock.ErrNotAcquired) {
							t.Fatalf("pair %d: %v, want nil or ErrNotAcquired", i, err)
						}
						t.Logf("pair %d: %v", i, err)
						fails = append(fails, i)
					}
				}
				if len(fails) != tt.wantFail || len(fails) > 0 && fails[len(fails)-1] != len(fails)-1 {
					t.Errorf("failed pairs %v, want the first %d only", fails, tt.wantFail)
				}
				for i, m := range mems {
					if v, ok, _ := m.Value(t.Context(), redlock.DefaultKeyPrefix+"r"); ok {
						t.Errorf("node %d still holds %q", i, v)
					}
				}
			})
		})
	}
}

// A frozen node costs an acquisition nothing when a quorum answers (R8.2:
// the decision never waits for it), however long the client waits for
// slow nodes; a frozen quorum ends an attempt at the node timeout once the
// client has seen the nodes' pace and the frozen nodes have been silent
// for longer than the limit, and at the limit (twenty node timeouts) before.
// A new client cannot tell frozen nodes from slow ones it has no history
// of: its first attempt waits for them a grant's patience (ttl/2 - drift),
// and so does the second (they are on probation: the first attempt's
// patience may have gone on their connections' set-up), and the attempts
// of the next ttl only the limit.
func TestFrozenNodesAndTheAdaptiveTimeout(t *testing.T) {
	const nt, ttl = 50 * time.Millisecond, time.Minute
	patience := ttl/2 - ttl/100 - 2*time.Millisecond
	tests := []struct {
		name   string
		warm   bool
		frozen int
		tries  int           // TryLocks before the one timed (new client)
		want   time.Duration // the TryLock's duration (fake time)
		ok     bool
	}{
		{"one frozen node, new client", false, 1, 0, 0, true},
		{"two frozen nodes, warm client", true, 2, 0, 0, true},
		{"three frozen nodes that just answered, warm client", true, 3, 0, 20 * nt, false},
		{"three frozen nodes silent past the limit, warm client", true, 3, 0, nt, false},
		{"three frozen nodes, new client", false, 3, 0, patience, false},
		{"three frozen nodes, new client, second try", false, 3, 1, patience, false},
		{"three frozen nodes, new client, third try", false, 3, 2, 20 * nt, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				c, err := redlock.New(nodes, redlock.WithNodeTimeout(nt), redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if tt.warm {
					l, err := c.TryLock(t.Context(), "warm")
					if err != nil {
						t.Fatal(err)
					}
					if err := l.Unlock(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
				for _, m := range mems[:tt.frozen] {
					m.Freeze()
				}
				if strings.Contains(tt.name, "silent") {
					time.Sleep(2 * time.Second) // fake time: past the limit
				}
				defer func() {
					for _, m := range mems[:tt.frozen] {
						m.Thaw()
					}
				}()
				for range tt.tries {
					if _, err := c.TryLock(t.Context(), "r"); err == nil {
						t.Fatal("TryLock granted over three frozen nodes of five")
					}
				}
				start := time.Now()
				l, err := c.TryLock(t.Context(), "r")
				took := time.Since(start)
				if (err == nil) != tt.ok {
					t.Fatalf("TryLock: %v, want success %v", err, tt.ok)
				}
				// A failed final attempt also waits for its releases
				// (twice the timeout at most) before it returns; the
				// decision is what is timed here.
				if tt.ok && took != tt.want {
					t.Errorf("TryLock took %v, want %v", took, tt.want)
				}
				if !tt.ok {
					var ae *redlock.AcquireError
					if !errors.As(err, &ae) {
						t.Fatalf("TryLock: %v, want an AcquireError", err)
					}
					for _, r := range ae.Nodes[:tt.frozen] {
						if r.Outcome != redlock.TimedOut || r.Latency != tt.want {
							t.Errorf("node %s: %v after %v, want timed out after %v", r.Node, r.Outcome, r.Latency, tt.want)
						}
					}
				}
				if l != nil {
					_ = l.Unlock(t.Context())
				}
			})
		})
	}
}
