package goredis_test

import (
	"flag"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest/faultconn"
)

var (
	wireSeed   = flag.Uint64("wire.seed", 0, "TestWireFaults: the seed to replay (0: drawn from the clock, logged on failure)")
	wireFaults = flag.String("wire.faults", "all", "TestWireFaults: the faults to inject, a comma-separated list of faultconn.Fault names, or all")
)

// Concurrent lock requests over connections that fail, stall, truncate and
// reset (redlock/redlocktest/faultconn): every answer agrees with what the
// node holds: every fault at once, then each fault alone (-wire.faults
// picks a set); then the same over nodes that are Redis Clusters of two
// masters each ("cluster/..."), through a go-redis cluster client.
func TestWireFaults(t *testing.T) {
	faultconn.Suite{
		Seed:     *wireSeed,
		Workload: faultconn.Workload{Rounds: 3000, Budget: 5 * time.Second},
		NewNode: func(t *testing.T, addr string, in *faultconn.Injector) adapter.Node {
			c := redis.NewClient(&redis.Options{Addr: addr, Dialer: in.Dial, MaxRetries: -1, ContextTimeoutEnabled: true, DialTimeout: time.Second})
			t.Cleanup(func() { _ = c.Close() })
			return goredis.NewNode(c, addr)
		},
	}.RunFaults(t, *wireFaults)
	t.Run("cluster", func(t *testing.T) {
		faultconn.Suite{
			Seed:     *wireSeed,
			Workload: faultconn.Workload{Rounds: 3000, Budget: 5 * time.Second},
			Cluster:  true,
			Masters:  2,
			NewNode: func(t *testing.T, addr string, in *faultconn.Injector) adapter.Node {
				u, err := redlock.ParseNodeURL("redis://" + addr + "?cluster=true")
				if err != nil {
					t.Fatal(err)
				}
				c, err := goredis.NewClusterClient(u)
				if err != nil {
					t.Fatal(err)
				}
				_ = c.Close()
				o := c.Options()
				o.Dialer = in.Dial
				c = redis.NewClusterClient(o)
				t.Cleanup(func() { _ = c.Close() })
				return goredis.NewNode(c, addr)
			},
		}.RunFaults(t, *wireFaults)
	})
}
