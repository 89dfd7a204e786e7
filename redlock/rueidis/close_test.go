package rueidis_test

import (
	"testing"
	"time"

	"github.com/redis/rueidis"

	"dlm/redlock/redlocktest"
	dlmrueidis "dlm/redlock/rueidis"
)

// TestCloseDoesNotWaitForTheServersAnswers: nodes whose servers stopped
// answering after their connections were made (SIGSTOP; a server slow to
// answer on a loaded machine looks the same to Close) close at once.
// rueidis' Close of a connection first sends it a PING and waits for the
// answer, up to a second: each node's Close took a second here, and a
// client's Close, which closes its nodes one after the other, a second
// per node (1.999 s over two healthy plain servers, once, in a fresh
// clone's make test beside two busy loops).
func TestCloseDoesNotWaitForTheServersAnswers(t *testing.T) {
	redlocktest.Require(t)
	cl := redlocktest.Start(t, 3)
	var nodes []*dlmrueidis.Node
	for _, s := range cl.Servers {
		n, err := dlmrueidis.DialNode(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Acquire(t.Context(), "k", "v", time.Minute); err != nil {
			t.Fatalf("Acquire on %s = %v", n, err)
		}
		nodes = append(nodes, n)
	}
	for _, s := range cl.Servers {
		s.Freeze()
		t.Cleanup(s.Thaw)
	}
	start := time.Now()
	for _, n := range nodes {
		if err := n.Close(); err != nil {
			t.Errorf("Close of %s = %v", n, err)
		}
	}
	// Generous: no answer is waited for at all (about a millisecond), and
	// before the fix each node waited a second.
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the Close of %d nodes whose servers stopped answering took %v, want no wait for their answers (rueidis waits up to a second per connection)", len(nodes), took.Round(time.Millisecond))
	}
}

// TestCloseOfAClusterNodeWithAFrozenMasterWhileItRefreshes: a cluster
// node whose first master hangs is closed while rueidis reads its slot
// map again (every millisecond here; every 2 s by default), from a server
// it picks at random, the frozen one included: Close waits neither for
// that read nor for the connection it makes to the frozen master.
func TestCloseOfAClusterNodeWithAFrozenMasterWhileItRefreshes(t *testing.T) {
	redlocktest.Require(t)
	plain := redlocktest.Start(t, 2)
	cl := redlocktest.StartRedisCluster(t, 2, 0)
	cl.Masters()[0].Freeze()
	defer cl.Masters()[0].Thaw()
	often := func(o *rueidis.ClientOption) { o.ClusterOption.ShardsRefreshInterval = time.Millisecond }
	for i := range 3 {
		c, err := dlmrueidis.DialTuned(append(plain.URLs(), cl.URL()), []dlmrueidis.Option{often})
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.TryLock(t.Context(), "r")
		if err != nil {
			t.Errorf("TryLock with the two plain nodes healthy = %v", err)
		} else if err := l.Unlock(t.Context()); err != nil {
			t.Errorf("Unlock = %v", err)
		}
		start := time.Now()
		_ = c.Close()
		// Generous: the releases of the client's last requests may wait
		// up to their node timeout's limit (a second at the defaults).
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Errorf("Close %d took %v with the cluster's first master frozen and its slot map read every millisecond, want it not to wait for the read", i, took.Round(time.Millisecond))
		}
	}
}

// TestCloseOfAWatchDoesNotWaitForItsServer: a node's release subscription
// (a waiter's) whose server stopped answering after it subscribed closes
// at once, and so does the node. Giving the subscription's connection
// back to rueidis' pool made rueidis unsubscribe on it and wait for the
// answer without a deadline: a client's Close, which closes its
// subscriptions before its nodes, waited 2 min 10 s (found by review).
func TestCloseOfAWatchDoesNotWaitForItsServer(t *testing.T) {
	redlocktest.Require(t)
	s := redlocktest.StartServer(t)
	n, err := dlmrueidis.DialNode(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	w, err := n.WatchReleases(func(key, value string) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Watch(t.Context(), "k"); err != nil {
		t.Fatalf("Watch = %v", err)
	}
	s.Freeze()
	thawed := false
	defer func() {
		if !thawed {
			s.Thaw()
		}
	}()
	closed := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		_ = w.Close()
		_ = n.Close()
		closed <- time.Since(start)
	}()
	// Generous: before the fix, the watch's Close alone waited minutes.
	select {
	case took := <-closed:
		t.Logf("the watch and the node closed in %v", took.Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		s.Thaw() // lets the Close end
		thawed = true
		<-closed
		t.Fatal("the Close of a watch and its node whose server stopped answering still waits 15 s later, want it not to wait for the server")
	}
}
