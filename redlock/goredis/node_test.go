package goredis_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

func TestConformance(t *testing.T) {
	redlocktest.RunNodeConformance(t, func(t testing.TB, s *redlocktest.Server) redlock.Node {
		u, err := redlock.ParseNodeURL(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		c := goredis.NewClient(u)
		t.Cleanup(func() { _ = c.Close() })
		return goredis.NewNode(c, s.Addr())
	})
}

func TestNewNodeLeavesCallersClientOpen(t *testing.T) {
	s := redlocktest.StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	n := goredis.NewNode(c, s.Addr())
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("caller's client closed by Node.Close: %v", err)
	}
}

// DialNode refuses a URL it cannot use with an error that names it.
func TestDialNodeRefusesBadInput(t *testing.T) {
	for _, raw := range []string{"", "http://127.0.0.1:1", "redis://127.0.0.1:70000"} {
		n, err := goredis.DialNode(raw)
		if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), raw) {
			if n != nil {
				_ = n.Close()
			}
			t.Fatalf("DialNode(%q) error = %v, want ErrInvalid naming the URL", raw, err)
		}
	}
}

func TestClusterConformance(t *testing.T) {
	redlocktest.RunClusterNodeConformance(t, func(t testing.TB, c *redlocktest.RedisCluster) redlock.Node {
		n, err := goredis.DialNode(c.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		if !n.Cluster() {
			t.Fatal("a node dialled with cluster=true is not a cluster node")
		}
		return n
	})
}
