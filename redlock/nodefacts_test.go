package redlock_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// advertise makes every server of cl advertise max ttl d, as `dlm node
// --max-ttl d` does.
func advertise(t *testing.T, servers []*redlocktest.Server, d time.Duration) {
	t.Helper()
	for _, s := range servers {
		if err := s.Client().Set(t.Context(), adapter.MaxTTLKey, d.String(), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A library user who never calls CheckNodes: a lock whose ttl is over the
// max ttl the nodes advertise is refused, the first lock too, naming the
// node by address, the ttl, the max and the fix; a ttl within it passes.
// Real nodes, both adapters.
func TestLockRefusesTTLOverAdvertisedMaxTTL(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		advertise(t, cl.Servers, 40*time.Second)
		c := dial(t, a, cl)
		l, err := c.TryLock(t.Context(), "x", redlock.WithTTL(time.Minute))
		if !errors.Is(err, redlock.ErrInvalid) {
			t.Fatalf("TryLock with a 1m ttl on nodes advertising 40s = %v, %v; want ErrInvalid", l, err)
		}
		for _, want := range []string{"ttl 1m0s", "max ttl 40s", cl.Servers[0].Addr(), "dlm node --max-ttl"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if got := cl.MustValues("dlm:lock:x"); got[0]+got[1]+got[2] != "" {
			t.Errorf("the refused lock wrote %q to the nodes", got)
		}
		l, err = c.TryLock(t.Context(), "x", redlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatalf("TryLock with a 30s ttl = %v", err)
		}
		_ = l.Unlock(t.Context())
	})
}

// A node restarted with a smaller max ttl is read again on its new
// connection: once the client noticed the restart (the request after it
// fails on the old connection, the next one connects), a lock over the new
// max ttl is refused. Real nodes, both adapters. The smaller max ttl is
// set before the restart and kept by the node's AOF: set after it, a
// request still on its way to the node (an Unlock's release, which
// returns at a quorum) could connect first and read none, and that
// connection lasts ("12738 locks of 30s in 10s after the restart with max
// ttl 20s: last error <nil>", rueidis, once at load 25).
func TestRestartedNodeFactsAreReadAgain(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3, redlocktest.WithPersistence())
		advertise(t, cl.Servers, 40*time.Second)
		// Node 2 advertises 20s: one node under the lock's ttl is
		// counted as failed, two refuse the lock.
		advertise(t, cl.Servers[1:2], 20*time.Second)
		c := dial(t, a, cl)
		lockUnlock := func() error {
			l, err := c.TryLock(t.Context(), "x", redlock.WithTTL(30*time.Second))
			if err == nil {
				_ = l.Unlock(t.Context())
			}
			return err
		}
		if err := lockUnlock(); err != nil {
			t.Fatalf("lock with a 30s ttl under 40s (one node under it, counted out): %v", err)
		}
		advertise(t, cl.Servers[:1], 20*time.Second) // the client's connection read 40s
		cl.Servers[0].Restart(0)
		// The second lock after the restart is refused, unless the node
		// could not be reached in its node timeout (a loaded machine):
		// then a later one.
		var err error
		tries := 0
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			tries++
			if err = lockUnlock(); errors.Is(err, redlock.ErrInvalid) {
				break
			}
		}
		if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "max ttl 20s") || !strings.Contains(err.Error(), cl.Servers[0].Addr()) {
			t.Fatalf("%d locks of 30s in 10s after the restart with max ttl 20s: last error %v; want ErrInvalid naming %s and max ttl 20s", tries, err, cl.Servers[0].Addr())
		}
		t.Logf("refused at lock %d after the restart", tries)
	})
}

// The checks cost no request on the lock path: once the nodes are
// connected, locks send no CLIENT or PING (the commands of the handshake
// and of Connect), and INFO and CONFIG only in the readings of the facts
// again that a running client makes, at most one per second (half the 2 s
// the facts may age), counted by the servers' own command statistics.
func TestNodeChecksSendNoRequest(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		advertise(t, cl.Servers, 40*time.Second)
		c := dial(t, a, cl) // no fencing: its scripts read INFO replication
		lockUnlock := func() {
			l, err := c.Lock(t.Context(), "x", redlock.WithTTL(30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			_ = l.Unlock(t.Context())
		}
		lockUnlock() // connects
		before := commandCalls(t, cl)
		start := time.Now()
		for range 20 {
			lockUnlock()
		}
		readings := int(time.Since(start)/time.Second) + 1
		after := commandCalls(t, cl)
		// A reading: INFO server and replication, three CONFIG GETs.
		most := map[string]int{"info": 2*readings + 1, "config|get": 3 * readings} // +1: the INFO commandstats that read before
		for i := range after {
			for cmd, n := range after[i] {
				if !strings.HasPrefix(cmd, "config") && !strings.HasPrefix(cmd, "client") && cmd != "ping" && cmd != "info" {
					continue
				}
				if n-before[i][cmd] > most[cmd] {
					t.Errorf("server %d: %s called %d times during 20 locks (%d reading(s) of the facts at most), want at most %d", i, cmd, n-before[i][cmd], readings, most[cmd])
				}
			}
		}
	})
}

// commandCalls returns each server's calls per command (INFO
// commandstats).
func commandCalls(t *testing.T, cl *redlocktest.Cluster) []map[string]int {
	t.Helper()
	out := make([]map[string]int, len(cl.Servers))
	for i, s := range cl.Servers {
		txt, err := s.Client().Info(t.Context(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = map[string]int{}
		for line := range strings.Lines(txt) {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			out[i][strings.TrimPrefix(name, "cmdstat_")], _ = strconv.Atoi(calls)
		}
	}
	return out
}

// A plain node's replication, read on connecting: a master with a
// replica and the replica given as a node are refused by CheckNodes (dlm
// doctor FAILs both), two nodes of three leaving no quorum; with
// WithPromotableReplicas the master's replica is only warned of, and the
// replica as a node is still refused, counted as a failed node (a
// warning: the other two make a quorum). Real nodes, both adapters.
func TestCheckNodesJudgesReplication(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	host, port, _ := strings.Cut(cl.Servers[1].Addr(), ":")
	if err := cl.Servers[2].Client().ReplicaOf(t.Context(), host, port).Err(); err != nil {
		t.Fatal(err)
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		info, err := cl.Servers[1].Client().Info(t.Context(), "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:1")
	}, "the replica did not connect in 10s")
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		_, err := dial(t, a, cl).CheckNodes(t.Context())
		for _, w := range []string{cl.Servers[1].Addr() + " has 1 replica(s)", cl.Servers[2].Addr() + " is a replica"} {
			if !errors.Is(err, redlock.ErrInvalid) || err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("CheckNodes = %v; want ErrInvalid saying %q", err, w)
			}
		}
		rep, err := dial(t, a, cl, redlock.WithPromotableReplicas()).CheckNodes(t.Context())
		if err != nil {
			t.Errorf("with WithPromotableReplicas: CheckNodes = %v; want the replica node counted as failed, not an error", err)
		}
		for _, w := range []string{cl.Servers[1].Addr() + " has 1 replica(s)", "counted as a failed node by every lock (refused while the other nodes make a quorum without it): node " + cl.Servers[2].Addr() + " is a replica"} {
			if !strings.Contains(strings.Join(rep.Warnings, "\n"), w) {
				t.Errorf("with WithPromotableReplicas: warnings %q; want one saying %q", rep.Warnings, w)
			}
		}
	})
}
