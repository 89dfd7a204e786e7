package main

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestLockOneTryOverSlowNodes: dlm lock is a new client every time, so it
// knows nothing of its nodes' pace. With two of three healthy nodes
// answering later than the limit (a tenth of the ttl) but well within the
// patience a grant gives a slow node (ttl/2 - drift), one try (--wait 0)
// is granted over either adapter: its attempt waits for the nodes it has
// no history of as it waits for slow ones, and the new connections'
// set-up is bounded by that wait, not by the shorter reading of the
// nodes' facts that may have started it (rueidis failed 4 of 12 runs
// here so, exit 69 after 3.3-3.8 s).
func TestLockOneTryOverSlowNodes(t *testing.T) {
	// ttl 10s: limit 1s, patience 4.898s; a new connection and its first
	// request take two round trips (2.2s).
	const slow = 1100 * time.Millisecond
	c := redlocktest.Start(t, 3)
	urls := c.URLs()
	var delay atomic.Int64
	delay.Store(int64(slow))
	for i := 1; i < 3; i++ {
		urls[i] = "redis://" + redlocktest.DelayProxy(t, c.Servers[i].Addr(), &delay)
	}
	nodes := strings.Join(urls, ",")
	for _, adapter := range []string{"goredis", "rueidis"} {
		r := runDLM(t, time.Minute, nil, "lock", "--adapter", adapter, "--nodes", nodes, "--ttl", "10s", "--wait", "0", "fresh-"+adapter, "--", "true")
		if r.code != 0 {
			t.Errorf("dlm lock --adapter %s --ttl 10s --wait 0 over two of three nodes answering %v late: exit %d after %v; stderr: %s",
				adapter, slow, r.code, r.elapsed.Round(time.Millisecond), r.stderr)
		}
	}
}

// TestLockOverTooSlowNodesAsksForALongerTTL: over healthy nodes answering
// later than a grant of the ttl may wait and still leave the lock the
// validity to be kept (at ttl 3s, 1.468s: ttl/2 - drift), dlm lock exits 69 (no quorum in time) and says why: the nodes
// answer too late for the ttl, and a longer --ttl is what to give. A new
// connection's first acquisition is answered in one round trip (go-redis
// sends it in its handshake's), so the nodes answer later than the wait.
func TestLockOverTooSlowNodesAsksForALongerTTL(t *testing.T) {
	const slow = 1700 * time.Millisecond
	c := redlocktest.Start(t, 3)
	urls := c.URLs()
	var delay atomic.Int64
	delay.Store(int64(slow))
	for i := 1; i < 3; i++ {
		urls[i] = "redis://" + redlocktest.DelayProxy(t, c.Servers[i].Addr(), &delay)
	}
	r := runDLM(t, time.Minute, nil, "lock", "--adapter", "goredis", "--nodes", strings.Join(urls, ","), "--ttl", "3s", "--wait", "0", "too-slow", "--", "true")
	if r.code != exitUnavailable || !strings.Contains(r.stderr, "longer --ttl") {
		t.Errorf("dlm lock --ttl 3s --wait 0 over two of three nodes answering %v late: exit %d after %v, want %d saying the nodes need a longer --ttl; stderr: %s",
			slow, r.code, r.elapsed.Round(time.Millisecond), exitUnavailable, r.stderr)
	}
}
