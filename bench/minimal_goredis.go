package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// minimalGoRedis is the minimal Redlock of minimal.go over go-redis v9
// instead of rueidis, with go-redis' own auto-pipelining
// (Client.AsyncAutoPipeline, with its default options: one ordered batch
// in flight per node, no flush delay): on every node one SET key value NX
// PX ttl to acquire and one EVALSHA of the compare-and-delete script to
// release, submitted to all nodes at once and then awaited. go-redis
// gathers the commands of concurrent callers to one node into one pipeline.
// Nothing else: no retry, node timeout, drift, hand-off or fencing.
type minimalGoRedis struct {
	clients []*redis.Client
	aps     []*redis.AutoPipeliner
	sha     string
}

func openMinimalGoRedis(urls []string) (locker, error) {
	m := &minimalGoRedis{}
	for _, u := range urls {
		o, err := redis.ParseURL(u)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("minimal (go-redis): node URL: %w", err)
		}
		o.MaxRetries = -1 // a lost reply is not a reason to send a SET NX twice
		c := redis.NewClient(o)
		m.clients = append(m.clients, c)
		sha, err := c.ScriptLoad(context.Background(), minimalDel).Result()
		if err != nil {
			m.close()
			return nil, fmt.Errorf("minimal (go-redis): SCRIPT LOAD on %s: %w", o.Addr, err)
		}
		m.sha = sha
		ap, err := c.AsyncAutoPipeline()
		if err != nil {
			m.close()
			return nil, fmt.Errorf("minimal (go-redis): auto-pipeline of %s: %w", o.Addr, err)
		}
		m.aps = append(m.aps, ap)
	}
	return m, nil
}

func (m *minimalGoRedis) TryLock(ctx context.Context, key string) (func(context.Context) error, error) {
	val := minimalValue()
	return minimalTry(len(m.aps), func() int {
		sets := make([]*redis.StatusCmd, len(m.aps))
		for i, ap := range m.aps {
			sets[i] = ap.SetArgs(ctx, key, val, redis.SetArgs{Mode: "NX", TTL: minimalTTL})
		}
		n := 0
		for _, c := range sets {
			if c.Err() == nil {
				n++
			}
		}
		return n
	}, func(ctx context.Context) int {
		dels := make([]*redis.Cmd, len(m.aps))
		for i, ap := range m.aps {
			dels[i] = ap.EvalSha(ctx, m.sha, []string{key}, val)
		}
		n := 0
		for _, c := range dels {
			if d, err := c.Int64(); err == nil && d == 1 {
				n++
			}
		}
		return n
	})
}

// Lock retries TryLock every millisecond until ctx ends, as minimal.go's.
func (m *minimalGoRedis) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	return minimalRetry(ctx, key, m.TryLock)
}

func (m *minimalGoRedis) close() {
	for _, ap := range m.aps {
		_ = ap.Close()
	}
	for _, c := range m.clients {
		_ = c.Close()
	}
}
