package redlock_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"dlm/redlock"
	"dlm/redlock/internal/slots"
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
//
// Each case has something else in flight when Close comes: a release to
// the frozen master or to a healthy one, a request to the frozen master,
// or servers that stopped answering the connections made to them (what a
// server slow to answer on a loaded machine looks like to Close): rueidis'
// Close of a connection waited for the answer to a PING, up to a second,
// one node after the other, and a fresh clone's make test saw Close take
// 1.999 s over two healthy plain servers.
func TestCloseDoesNotWaitForAFrozenClusterMaster(t *testing.T) {
	plain := redlocktest.Start(t, 2)
	cl := redlocktest.StartRedisCluster(t, 2, 0)
	cl.Masters()[0].Freeze()
	defer cl.Masters()[0].Thaw()
	urls := append(plain.URLs(), cl.URL())
	cases := []struct {
		name string
		// before runs on the new client before Close; onFrozen and
		// onHealthy are resources of its own whose keys lie on the frozen
		// master and on the healthy one.
		before func(t *testing.T, c *redlock.Client, onFrozen, onHealthy string)
	}{
		{"after Unlock of a lock on the healthy master", func(t *testing.T, c *redlock.Client, _, onHealthy string) {
			lockUnlock(t, c, onHealthy, "with the plain nodes healthy")
		}},
		{"after Unlock of a lock on the frozen master", func(t *testing.T, c *redlock.Client, onFrozen, _ string) {
			lockUnlock(t, c, onFrozen, "with the plain nodes healthy")
		}},
		{"with a lock on the frozen master held", func(t *testing.T, c *redlock.Client, onFrozen, _ string) {
			if _, err := c.TryLock(t.Context(), onFrozen); err != nil {
				t.Errorf("TryLock with the two plain nodes healthy = %v", err)
			}
		}},
		{"with the plain servers no longer answering", func(t *testing.T, c *redlock.Client, _, onHealthy string) {
			lockUnlock(t, c, onHealthy, "with the plain nodes healthy")
			// Every release answered (none is within its bound at Close);
			// the connections stay.
			for _, s := range plain.Servers {
				waitReleased(t, s, onHealthy)
			}
			for _, s := range plain.Servers {
				s.Freeze()
				t.Cleanup(s.Thaw)
			}
		}},
	}
	n := 0 // resources taken so far
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, a := range adapters() {
				onFrozen, onHealthy := resourceOn(t, true, n), resourceOn(t, false, n)
				n++
				before := goleak.IgnoreCurrent()
				c, err := a.dial(urls)
				if err != nil {
					t.Fatalf("%s.Dial: %v", a.name, err)
				}
				tc.before(t, c, onFrozen, onHealthy)
				start := time.Now()
				_ = c.Close()
				took := time.Since(start)
				t.Logf("%s: Close took %v", a.name, took.Round(time.Millisecond))
				// Generous: the releases of the client's last requests may
				// wait up to their node timeout's limit (a second at the
				// defaults).
				if took > 1500*time.Millisecond {
					t.Errorf("%s: Close took %v with the cluster node's first master frozen, %s; want it not to wait for connections to it, nor for the servers' answers", a.name, took.Round(time.Millisecond), tc.name)
				}
				for _, s := range plain.Servers {
					s.Thaw()
				}
				// goleak waits a while for goroutines to end before it reports.
				if err := goleak.Find(append(mainIgnores(), before)...); err != nil {
					t.Errorf("%s: goroutines left after Close with the cluster node's first master frozen: %v", a.name, err)
				}
			}
		})
	}
}

// resourceOn returns the k-th resource name whose keys lie in the slots
// of the first master of a two-master cluster (redlocktest.StartRedisCluster:
// the lower half) when first is set, else in the second's.
func resourceOn(t *testing.T, first bool, k int) string {
	t.Helper()
	for i := range 10000 {
		name := fmt.Sprintf("r%d", i)
		if s := slots.Of(redlock.HashTaggedKey(redlock.DefaultKeyPrefix, name)); (s < slots.Count/2) == first {
			if k == 0 {
				return name
			}
			k--
		}
	}
	t.Fatal("no resource name found for the master")
	return ""
}

// waitReleased waits until s no longer holds resource's key.
func waitReleased(t *testing.T, s *redlocktest.Server, resource string) {
	t.Helper()
	key := redlock.DefaultKeyPrefix + resource
	deadline := time.Now().Add(10 * time.Second)
	for {
		keys, err := s.Keys(t.Context(), key)
		if err == nil && !slices.Contains(keys, key) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds %s (%v) 10 s after Unlock", s.Addr(), key, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
