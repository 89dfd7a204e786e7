package redlocktest

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redisproc"
)

// RedisCluster is a Redis Cluster of redis-server processes on loopback
// ports, owned by a test: one Redlock node that is a cluster.
type RedisCluster struct {
	*redisproc.Cluster
	client *redis.ClusterClient
}

// StartRedisCluster starts a Redis Cluster of masters masters (and
// replicas replicas each), with every slot assigned and cluster_state:ok,
// the servers configured by opts. It is stopped when the test ends.
func StartRedisCluster(t testing.TB, masters, replicas int, opts ...Option) *RedisCluster {
	t.Helper()
	return StartRedisClusters(t, 1, masters, replicas, opts...)[0]
}

// StartRedisClusters starts n Redis Clusters as StartRedisCluster does, at
// the same time: a new master serves only two seconds after it started
// (Redis Cluster's writable delay), so n clusters take about as long as
// one.
func StartRedisClusters(t testing.TB, n, masters, replicas int, opts ...Option) []*RedisCluster {
	t.Helper()
	Require(t)
	var cfg redisproc.Config
	for _, o := range opts {
		o(&cfg)
	}
	cs, err := redisproc.StartClusters(context.Background(), n, redisproc.ClusterConfig{
		Masters: masters, Replicas: replicas, Server: cfg, ReplicaNoFailover: true})
	if err != nil {
		t.Fatalf("redlocktest: %v", err)
	}
	out := make([]*RedisCluster, n)
	for i, c := range cs {
		t.Cleanup(c.Close)
		out[i] = &RedisCluster{Cluster: c, client: redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: c.Addrs(), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})}
		t.Cleanup(func() { _ = out[i].client.Close() })
	}
	return out
}

// Client returns a go-redis cluster client for inspecting the cluster.
func (c *RedisCluster) Client() *redis.ClusterClient { return c.client }

// Freeze stops every master with SIGSTOP.
func (c *RedisCluster) Freeze() {
	for _, m := range c.Masters() {
		m.Freeze()
	}
}

// Thaw resumes every master.
func (c *RedisCluster) Thaw() {
	for _, m := range c.Masters() {
		m.Thaw()
	}
}

// FlushScripts forgets the scripts of every master (SCRIPT FLUSH).
func (c *RedisCluster) FlushScripts(ctx context.Context) error {
	var errs []error
	for _, m := range c.Masters() {
		errs = append(errs, m.Client().ScriptFlush(ctx).Err())
	}
	return errors.Join(errs...)
}

// Inspector returns an Inspector that reads the cluster with its own
// cluster client, outside any node under test.
func (c *RedisCluster) Inspector() Inspector {
	return serverInspector{cmd: func() redis.Cmdable { return c.client }, keys: c.keys}
}

// keys lists the keys under prefix on every master, sorted.
func (c *RedisCluster) keys(ctx context.Context, prefix string) ([]string, error) {
	var mu sync.Mutex
	var out []string
	err := c.client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		iter := m.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			out = append(out, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	})
	sort.Strings(out)
	return out, err
}

// ClusterNodeFactory returns a redlock.Node talking to the cluster c.
type ClusterNodeFactory func(t testing.TB, c *RedisCluster) redlock.Node

// RunClusterNodeConformance runs the node conformance suite
// (RunConformance) against a Redis Cluster of 3 masters, the node under
// test made by newNode: every adapter's cluster node must pass it. The
// cluster is started once; each backend the suite asks for is a new node
// over it, emptied first (FLUSHALL and SCRIPT FLUSH on every master, so
// that it is as fresh as a new server). It also checks, with every master
// stopped before the node's first request, that a request whose context
// ended before its master was reached is never written later
// (adapter.Node).
func RunClusterNodeConformance(t *testing.T, newNode ClusterNodeFactory) {
	c := StartRedisCluster(t, 3, 0)
	empty := func(t testing.TB) {
		c.Thaw()
		ctx := context.Background()
		for _, m := range c.Masters() {
			if err := m.Client().FlushAll(ctx).Err(); err != nil {
				t.Fatalf("redlocktest: FLUSHALL on %s: %v", m.Addr(), err)
			}
		}
		if err := c.FlushScripts(ctx); err != nil {
			t.Fatalf("redlocktest: %v", err)
		}
	}
	t.Run("NeverWrittenAfterItsContextEnded", func(t *testing.T) {
		runNeverWrittenLate(t, func(t *testing.T) (adapter.Node, func(), Inspector) {
			empty(t)
			c.Freeze()
			t.Cleanup(c.Thaw)
			return newNode(t, c), c.Thaw, c.Inspector()
		})
	})
	RunConformance(t, func(t testing.TB) Backend {
		empty(t)
		return Backend{Node: newNode(t, c), Inspect: c.Inspector(), Freeze: c.Freeze, Thaw: c.Thaw, FlushScripts: c.FlushScripts}
	})
}
