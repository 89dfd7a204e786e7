package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
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
	out := make([]*RedisCluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := redisproc.StartCluster(context.Background(), redisproc.ClusterConfig{
				Masters: masters, Replicas: replicas, Server: cfg, ReplicaNoFailover: true})
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = &RedisCluster{Cluster: c, client: redis.NewClusterClient(&redis.ClusterOptions{
				Addrs: c.Addrs(), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})}
		}()
	}
	wg.Wait()
	for _, c := range out {
		if c != nil {
			t.Cleanup(c.Close)
			t.Cleanup(func() { _ = c.client.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("redlocktest: %v", err)
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
func (c *RedisCluster) Inspector() Inspector { return clusterInspector{c} }

type clusterInspector struct{ c *RedisCluster }

func (i clusterInspector) Value(ctx context.Context, key string) (string, bool, error) {
	v, err := i.c.client.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return v, err == nil, err
}

func (i clusterInspector) TTL(ctx context.Context, key string) (time.Duration, bool, error) {
	d, err := i.c.client.PTTL(ctx, key).Result()
	switch {
	case err != nil:
		return 0, false, err
	case d == -2 || d == -2*time.Millisecond:
		return 0, false, nil
	case d == -1 || d == -1*time.Millisecond:
		return NoExpiry, true, nil
	}
	return d, true, nil
}

func (i clusterInspector) Fence(ctx context.Context, fenceKey string) (uint64, error) {
	v, ok, err := i.Value(ctx, fenceKey)
	if err != nil || !ok {
		return 0, err
	}
	f, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redlocktest: fence %q is not a uint64: %w", v, err)
	}
	return f, nil
}

// Keys lists the keys under prefix on every master, sorted.
func (i clusterInspector) Keys(ctx context.Context, prefix string) ([]string, error) {
	var mu sync.Mutex
	var out []string
	err := i.c.client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
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

func (i clusterInspector) Put(ctx context.Context, key, value string) error {
	return i.c.client.Set(ctx, key, value, 0).Err()
}

// ClusterNodeFactory returns a redlock.Node talking to the cluster c.
type ClusterNodeFactory func(t testing.TB, c *RedisCluster) redlock.Node

// RunClusterNodeConformance runs the node conformance suite
// (RunConformance) against a Redis Cluster of 3 masters, the node under
// test made by newNode: every adapter's cluster node must pass it. The
// cluster is started once; each backend the suite asks for is a new node
// over it, emptied first (FLUSHALL and SCRIPT FLUSH on every master, so
// that it is as fresh as a new server).
func RunClusterNodeConformance(t *testing.T, newNode ClusterNodeFactory) {
	c := StartRedisCluster(t, 3, 0)
	RunConformance(t, func(t testing.TB) Backend {
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
		return Backend{Node: newNode(t, c), Inspect: c.Inspector(), Freeze: c.Freeze, Thaw: c.Thaw, FlushScripts: c.FlushScripts}
	})
}
