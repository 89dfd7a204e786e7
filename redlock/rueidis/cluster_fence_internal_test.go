package rueidis

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dlm/redlock/redlocktest"

	"github.com/redis/rueidis"
)

// TestClusterNodeFencesEveryConnection: every connection that a cluster
// node makes to a master goes through the node's dial function, which the
// reconnect fence wraps (fence.go), whatever the request that made it:
// rueidis' connections to the masters of its slot map, which carry the
// requests routed by owners (doByOwner, redirect, reroute), the facts
// reading (Connect), a subscription (WatchReleases), Scan, and the
// clusterClient's own client of a master missing from rueidis' map
// (node). A connection made another way is not fenced: a request left
// behind on it, once it was given up, could run on its master after the
// requests of the connection that replaced it (a late acquisition after
// its release). Each master lists its clients (CLIENT LIST); every one
// carrying the node's client name must be one that the node's dial
// function made.
func TestClusterNodeFencesEveryConnection(t *testing.T) {
	t.Parallel()
	cl := redlocktest.StartRedisCluster(t, 2, 0)
	const name = "fence-check"
	var mu sync.Mutex
	dialled := map[string]bool{} // the local address of each connection made by the dial function
	n, err := DialNode("redis://"+cl.Masters()[0].Addr()+"?cluster=true", func(o *rueidis.ClientOption) {
		o.ClientName = name
		o.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			nc, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				mu.Lock()
				dialled[nc.LocalAddr().String()] = true
				mu.Unlock()
			}
			return nc, err
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	if err := n.Connect(ctx); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	// Keys on both masters, one by one and as one batch (concurrent).
	var keys []string
	for i := range 16 {
		keys = append(keys, "fence-check:"+strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() {
			if ok, err := n.Acquire(ctx, k, "v", time.Minute); !ok || err != nil {
				t.Errorf("Acquire(%s) = %v, %v; want true", k, ok, err)
			}
			if ok, err := n.Release(ctx, k, "v"); !ok || err != nil {
				t.Errorf("Release(%s) = %v, %v; want true", k, ok, err)
			}
		})
	}
	wg.Wait()
	w, err := n.WatchReleases(func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	for _, k := range keys[:4] {
		if err := w.Watch(ctx, k); err != nil {
			t.Fatalf("Watch(%s): %v", k, err)
		}
	}
	if _, _, err := n.Scan(ctx, "fence-check:", "", 10); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	// The clusterClient's own client of a master, under a name that
	// rueidis' slot map does not have.
	cc := clusterOf(n.conn(ctx))
	if cc == nil {
		t.Fatal("the cluster node has no clusterClient")
	}
	other := "localhost:" + strconv.Itoa(cl.Masters()[1].Port())
	own, ok := cc.node(other)
	if !ok {
		t.Fatalf("clusterClient.node(%s): no client", other)
	}
	if err := own.Do(ctx, own.B().Ping().Build()).Error(); err != nil {
		t.Fatalf("PING over the clusterClient's own client of %s: %v", other, err)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, m := range cl.Masters() {
		list, err := m.Client().ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
			f := clientFields(line)
			if f["name"] != name {
				continue
			}
			seen++
			if !dialled[f["addr"]] {
				t.Errorf("master %s: connection %s (id %s, last command %s) was not made by the node's dial function: not fenced",
					m.Addr(), f["addr"], f["id"], f["cmd"])
			}
		}
		if seen == 0 {
			t.Errorf("master %s: no connection of the node (CLIENT LIST, name=%s)", m.Addr(), name)
		}
		t.Logf("master %s: %d connections of the node", m.Addr(), seen)
	}
}

// clientFields reads one line of CLIENT LIST (key=value pairs).
func clientFields(line string) map[string]string {
	f := map[string]string{}
	for kv := range strings.FieldsSeq(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f[k] = v
		}
	}
	return f
}
