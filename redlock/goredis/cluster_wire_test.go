package goredis_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
	"dlm/redlock/redlocktest/faultconn"
)

// holdClusterNode returns a node over a one-master Redis Cluster whose
// connections are HoldConns (d), once it answered a first acquisition;
// c is the connection that carried it (the master's client whose last
// command was that SET: go-redis dials others to learn the slots, and
// the node others to read the servers' slot map), and truth a client of
// the master that no test touches.
func holdClusterNode(t *testing.T) (n *goredis.Node, d *faultconn.HoldDialer, c *faultconn.HoldConn, truth *redis.Client) {
	t.Helper()
	cl := redlocktest.StartRedisCluster(t, 1, 0)
	d = &faultconn.HoldDialer{}
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cl.Addrs(), Dialer: d.Dial, MaxRetries: -1, MaxRedirects: 3,
		ContextTimeoutEnabled: true, DialTimeout: time.Second, Protocol: 2,
	})
	t.Cleanup(func() { _ = cc.Close() })
	n = goredis.NewNode(cc, "cluster")
	t.Cleanup(func() { _ = n.Close() })
	if ok, err := n.Acquire(t.Context(), "{first}", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire(first) = %v, %v; want true", ok, err)
	}
	truth = cl.Masters()[0].Client()
	list, err := truth.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " cmd=set ") {
			continue
		}
		for _, c := range d.Conns() {
			if strings.Contains(line, " addr="+c.LocalAddr().String()+" ") {
				return n, d, c, truth
			}
		}
	}
	t.Fatalf("no connection of the node's carried its first acquisition; the master's clients:\n%s", list)
	return nil, nil, nil, nil
}

// A cluster node's requests to one master run there in the order they
// were made, whatever way they take: a fenced acquisition (attempt 2)
// made after a release of the same value (attempt 1, as WithValue
// retries) never runs before that release. Before the fix the fenced
// acquisition went through the go-redis cluster client's pool while the
// release went by a cluster pipeline: with the release's bytes held back
// on the way, the acquisition set the key, answered true, and the late
// release then deleted it.
func TestClusterFencedAcquisitionStaysBehindRelease(t *testing.T) {
	n, _, own, truth := holdClusterNode(t)
	ctx := t.Context()
	const key, fenceKey, value = "{fenced}", "dlm:fence:{fenced}", "attempt-value"
	own.Hold()
	rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := n.Release(rctx, key, value) // attempt 1's release, held back
	cancel()
	if err == nil {
		t.Fatal("held Release answered; want an error")
	}
	acquireFencedBehindHeld(t, n, own, key, fenceKey, value) // attempt 2
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The release ran, or never will: a request behind both, or the
	// connection gone.
	if _, err := n.Acquire(wctx, "{barrier}", "v", time.Minute); err != nil {
		if err := faultconn.WaitGone(wctx, truth, own); err != nil {
			t.Fatal(err)
		}
	}
	held, err := truth.Get(ctx, key).Result()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	if held != value {
		t.Errorf("the master holds %q under %s after an acquisition answered true; want %q (attempt 1's release ran after it)", held, key, value)
	}
}

// A request left behind on a connection to a cluster master that the
// node gave up never runs on the master after the requests of the
// connection that replaced it. Before the fix a cluster node's requests
// went through go-redis' cluster pool, whose new connections close
// nothing: attempt 1's late release deleted the key attempt 2 counted.
func TestClusterReplacedConnectionCannotRunLate(t *testing.T) {
	n, d, own, truth := holdClusterNode(t)
	faultconn.LateReleaseOver(t, n, d, own, "{late}", truth)
}

// A ClusterClient with an OnConnect hook, which only go-redis can run, is
// still a working cluster node (through go-redis' cluster pipelines), and
// its connections run the hook.
func TestClusterNodeWithOnConnectHook(t *testing.T) {
	cl := redlocktest.StartRedisCluster(t, 1, 0)
	var hooked atomic.Int64
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cl.Addrs(), MaxRetries: -1, ContextTimeoutEnabled: true,
		OnConnect: func(context.Context, *redis.Conn) error { hooked.Add(1); return nil },
	})
	t.Cleanup(func() { _ = cc.Close() })
	n := goredis.NewNode(cc, "cluster")
	t.Cleanup(func() { _ = n.Close() })
	ctx := t.Context()
	if ok, err := n.Acquire(ctx, "{hooked}", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v; want true", ok, err)
	}
	if ok, _, err := n.AcquireFenced(ctx, "{hooked}2", "dlm:fence:{hooked}2", "v", time.Minute); !ok || err != nil {
		t.Fatalf("AcquireFenced = %v, %v; want true", ok, err)
	}
	if ok, err := n.Release(ctx, "{hooked}", "v"); !ok || err != nil {
		t.Fatalf("Release = %v, %v; want true", ok, err)
	}
	if hooked.Load() == 0 {
		t.Error("no connection ran the OnConnect hook")
	}
}
