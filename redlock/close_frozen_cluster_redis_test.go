package redlock_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"dlm/redlock/redlocktest"
)

// TestCloseDoesNotWaitForAFrozenClusterMaster: one master of a Redis
// Cluster node hangs (SIGSTOP: it accepts connections and never answers).
// The lock is granted by the other nodes at once; Close must not then wait
// for a connection being made to the frozen master (its dial, its
// handshake), which it gives up, nor leave a goroutine behind: a frozen
// plain node costs Close about nothing, and a short-lived client (every
// dlm command) pays Close every time. Found by review: rueidis' Close
// took 9-10 s (its cluster client's refresh dialled the frozen master
// through the adapter's connection fence, whose handshake waited out the
// dial's deadline), goredis' 1-7 s (go-redis' cluster client read its slot
// map, for the node's routing, its facts reading and its own slot map,
// from a server it picked at random, over a connection of go-redis' own
// that no cancel ends before the request's deadline).
func TestCloseDoesNotWaitForAFrozenClusterMaster(t *testing.T) {
	plain := redlocktest.Start(t, 2)
	cl := redlocktest.StartRedisCluster(t, 2, 0)
	cl.Masters()[0].Freeze()
	defer cl.Masters()[0].Thaw()
	urls := append(plain.URLs(), cl.URL())
	for _, a := range adapters() {
		before := goleak.IgnoreCurrent()
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
		// goleak waits a while for goroutines to end before it reports.
		if err := goleak.Find(append(mainIgnores(), before)...); err != nil {
			t.Errorf("%s: goroutines left after Close with the cluster node's first master frozen: %v", a.name, err)
		}
	}
}
