package rueidis_test

import (
	"context"
	"crypto/tls"
	"flag"
	"net"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest/faultconn"
	"dlm/redlock/rueidis"

	rueidisclient "github.com/redis/rueidis"
)

var (
	wireSeed   = flag.Uint64("wire.seed", 0, "TestWireFaults: the seed to replay (0: drawn from the clock, logged on failure)")
	wireFaults = flag.String("wire.faults", "all", "TestWireFaults: the faults to inject, a comma-separated list of faultconn.Fault names, or all")
)

// Concurrent lock requests over connections that fail, stall, truncate and
// reset (redlock/redlocktest/faultconn): every answer agrees with what the
// node holds: every fault at once, then each fault alone (-wire.faults
// picks a set). The client is NewClient's, dialling through the injector;
// then the same over nodes that are Redis Clusters of two masters each
// ("cluster/..."), each a cluster node of DialNode.
func TestWireFaults(t *testing.T) {
	faultconn.Suite{
		Seed:     *wireSeed,
		Workload: faultconn.Workload{Rounds: 3000, Budget: 5 * time.Second},
		NewNode: func(t *testing.T, addr string, in *faultconn.Injector) adapter.Node {
			u, err := redlock.ParseNodeURL("redis://" + addr)
			if err != nil {
				t.Fatal(err)
			}
			c, err := rueidis.NewClient(u, func(o *rueidisclient.ClientOption) {
				o.DialCtxFn = func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
					return in.Dial(ctx, "tcp", addr)
				}
			})
			if c == nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return rueidis.NewNode(c, addr)
		},
	}.RunFaults(t, *wireFaults)
	t.Run("cluster", func(t *testing.T) {
		faultconn.Suite{
			Seed:     *wireSeed,
			Workload: faultconn.Workload{Rounds: 3000, Budget: 5 * time.Second},
			Cluster:  true,
			Masters:  2,
			NewNode: func(t *testing.T, addr string, in *faultconn.Injector) adapter.Node {
				n, err := rueidis.DialNode("redis://"+addr+"?cluster=true", func(o *rueidisclient.ClientOption) {
					o.DialCtxFn = func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
						return in.Dial(ctx, "tcp", addr)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				return n
			},
		}.RunFaults(t, *wireFaults)
	})
}
