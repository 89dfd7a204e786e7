package redlock_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestCloseDoesNotWaitForAFrozenClusterMaster: one master of a Redis
// Cluster node hangs (SIGSTOP: it accepts connections and never answers).
// The lock is granted by the other nodes at once; Close must not then wait
// for a connection being made to the frozen master (its dial, its
// handshake), which it gives up: a frozen plain node costs Close about
// nothing, and a short-lived client (every dlm command) pays Close every
// time. Found by review: rueidis' Close took 9-10 s (its cluster client's
// refresh dialled the frozen master through the adapter's connection
// fence, whose handshake waited out the dial's deadline), goredis' 2-3 s.
// rueidis only: goredis' Close may still wait, up to the deadline of the
// client's last request to the cluster node (a grant's patience for a node
// the client has no history of), for go-redis' own cluster client reading
// the slot map over a connection of its own, whose handshake the adapter
// does not make (1-7 s measured).
func TestCloseDoesNotWaitForAFrozenClusterMaster(t *testing.T) {
	plain := redlocktest.Start(t, 2)
	cl := redlocktest.StartRedisCluster(t, 2, 0)
	cl.Masters()[0].Freeze()
	defer cl.Masters()[0].Thaw()
	urls := append(plain.URLs(), cl.URL())
	for _, a := range adapters() {
		if a.name != "rueidis" {
			continue
		}
		c, err := a.dial(urls)
		if err != nil {
			t.Fatalf("%s.Dial: %v", a.name, err)
		}
		l, err := c.TryLock(t.Context(), "r")
		if err != nil {
			t.Errorf("%s: TryLock with the two plain nodes healthy = %v", a.name, err)
		} else if err := l.Unlock(context.WithoutCancel(t.Context())); err != nil {
			t.Errorf("%s: Unlock: %v", a.name, err)
		}
		start := time.Now()
		_ = c.Close()
		took := time.Since(start)
		t.Logf("%s: Close took %v", a.name, took.Round(time.Millisecond))
		// Generous: the releases of the client's last requests may wait
		// up to their node timeout's limit (a second at the defaults).
		if took > 1500*time.Millisecond {
			t.Errorf("%s: Close took %v with the cluster node's first master frozen, want it not to wait for connections to it", a.name, took.Round(time.Millisecond))
		}
	}
}
