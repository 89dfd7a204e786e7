package main

import (
	"context"
	"crypto/tls"
	"sync"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/goredis"
)

// clusterKeys counts the keys under prefix on every master of a node that
// is a Redis Cluster (at most maxKeysCounted in all): its keys are spread
// over the masters by hash slot, so the seed holds only its share. ok is
// false when a master could not be scanned.
func clusterKeys(ctx context.Context, u redlock.NodeURL, cfg *tls.Config, prefix string) (n int, ok bool) {
	cc, err := goredis.NewClusterClient(u)
	if err != nil {
		return 0, false
	}
	defer cc.Close()
	if o := cc.Options(); cfg != nil && o.TLSConfig != nil {
		o.TLSConfig = forServer(cfg, o.TLSConfig.ServerName)
	}
	var mu sync.Mutex
	ok = true
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		iter := m.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		count := 0
		for count < maxKeysCounted && iter.Next(ctx) {
			count++
		}
		mu.Lock()
		defer mu.Unlock()
		n = min(n+count, maxKeysCounted)
		return iter.Err()
	})
	return n, ok && err == nil
}
