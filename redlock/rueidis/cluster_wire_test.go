package rueidis_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	rd "github.com/redis/rueidis"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
	"dlm/redlock/redlocktest/faultconn"
	"dlm/redlock/rueidis"
)

// A request left behind on a connection to a cluster master that rueidis
// gave up never runs on the master after the requests of the connection
// that replaced it. Before the fix NewClusterClient's connections were
// not fenced (only NewClient's were): attempt 1's late release deleted
// the key attempt 2 counted.
func TestClusterReplacedConnectionCannotRunLate(t *testing.T) {
	cl := redlocktest.StartRedisCluster(t, 1, 0)
	u, err := redlock.ParseNodeURL(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	d := &faultconn.HoldDialer{}
	c, err := rueidis.NewClusterClient(u, func(o *rd.ClientOption) {
		o.DialCtxFn = func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return d.Dial(ctx, "tcp", addr)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	n := rueidis.NewNode(c, "cluster")
	if ok, err := n.Acquire(t.Context(), "{first}", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire(first) = %v, %v; want true", ok, err)
	}
	conns := d.Conns()
	faultconn.LateReleaseOver(t, n, d, conns[len(conns)-1], "{late}", cl.Masters()[0].Client())
}
