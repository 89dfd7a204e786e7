package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var _ Inspector = serverInspector{}

// Inspector returns an Inspector that reads the server with its own
// go-redis client (GET, PTTL, KEYS, SET), outside any node under test.
func (s *Server) Inspector() Inspector {
	return serverInspector{cmd: func() redis.Cmdable { return s.Client() }, keys: s.Process.Keys}
}

// serverInspector reads a store through a go-redis client (one server's,
// or a cluster's, rediscluster.go) and lists its keys with keys.
type serverInspector struct {
	cmd  func() redis.Cmdable
	keys func(ctx context.Context, prefix string) ([]string, error)
}

// Value reads key with GET.
func (i serverInspector) Value(ctx context.Context, key string) (string, bool, error) {
	v, err := i.cmd().Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return v, err == nil, err
}

// TTL reads key's expiry with PTTL.
func (i serverInspector) TTL(ctx context.Context, key string) (time.Duration, bool, error) {
	d, err := i.cmd().PTTL(ctx, key).Result()
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

// Fence reads the fence under fenceKey with GET.
func (i serverInspector) Fence(ctx context.Context, fenceKey string) (uint64, error) {
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

// Keys lists the keys under prefix with SCAN, sorted.
func (i serverInspector) Keys(ctx context.Context, prefix string) ([]string, error) {
	keys, err := i.keys(ctx, prefix)
	sort.Strings(keys)
	return keys, err
}

// Put sets key with SET, without expiry.
func (i serverInspector) Put(ctx context.Context, key, value string) error {
	return i.cmd().Set(ctx, key, value, 0).Err()
}
