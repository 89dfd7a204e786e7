package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"dlm/lockload"
	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/rueidis"
)

// locker is one library under test: the workloads' lockload.Locker, and
// close to let go of its connections.
type locker interface {
	lockload.Locker
	close()
}

// lib names a library and builds its locker over the nodes' URLs.
type lib struct {
	name string
	// single: the library locks one node only (a reference, not Redlock).
	single bool
	open   func(urls []string) (locker, error)
}

// The libraries' names.
const (
	libDLM          = "dlm (rueidis)"
	libDLMGoRedis   = "dlm (go-redis)"
	libDLMNoHandoff = "dlm (rueidis, no hand-off)"
	libRedsync      = "go-redsync"
	libMinimal      = "minimal (rueidis)"
	libMinimalGo    = "minimal (go-redis)"
	libRedislock    = "redislock (1 node)"
	libRueidislock  = "rueidislock (1 node)"
)

// libraries returns the libraries the program compares, dlm's first; tune
// adjusts dlm's rueidis clients and opts dlm's clients (none by default).
func libraries(tune []rueidis.Option, opts []redlock.Option) []lib {
	return []lib{
		{name: libDLM, open: func(urls []string) (locker, error) {
			c, err := rueidis.DialTuned(urls, tune, opts...)
			return newDLMLocker(c), err
		}},
		{name: libDLMGoRedis, open: func(urls []string) (locker, error) {
			c, err := goredis.Dial(urls, opts...)
			return newDLMLocker(c), err
		}},
		{name: libRedsync, open: openRedsync},
		{name: libMinimal, open: openMinimal},
		{name: libMinimalGo, open: openMinimalGoRedis},
		{name: libRedislock, single: true, open: openRedislock},
		{name: libRueidislock, single: true, open: openRueidislock},
	}
}

// dlmNoHandoff is dlm over rueidis with the hand-off turned off, for the
// contention workload.
func dlmNoHandoff(opts []redlock.Option) lib {
	return lib{name: libDLMNoHandoff, open: func(urls []string) (locker, error) {
		c, err := rueidis.Dial(urls, append([]redlock.Option{redlock.WithHandoff(false)}, opts...)...)
		return newDLMLocker(c), err
	}}
}

// dlmLocker is dlm's client through lockload's adapter.
type dlmLocker struct {
	lockload.Locker
	c *redlock.Client
}

func newDLMLocker(c *redlock.Client) dlmLocker { return dlmLocker{lockload.Client(c), c} }

func (d dlmLocker) close() { _ = d.c.Close() }

// redsyncLocker is go-redsync v4 over go-redis v9 clients with their default
// pools, as its README sets it up.
type redsyncLocker struct {
	rs      *redsync.Redsync
	clients []*redis.Client
}

func openRedsync(urls []string) (locker, error) {
	r := &redsyncLocker{}
	var pools []redsyncredis.Pool
	for _, u := range urls {
		o, err := redis.ParseURL(u)
		if err != nil {
			return nil, err
		}
		c := redis.NewClient(o)
		r.clients = append(r.clients, c)
		pools = append(pools, redsyncgoredis.NewPool(c))
	}
	r.rs = redsync.New(pools...)
	return r, nil
}

func (r *redsyncLocker) TryLock(ctx context.Context, key string) (func(context.Context) error, error) {
	return r.acquire(ctx, r.rs.NewMutex(key, redsync.WithTries(1)))
}

func (r *redsyncLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	return r.acquire(ctx, r.rs.NewMutex(key)) // its default retry: 32 tries, 50-250ms apart
}

func (r *redsyncLocker) acquire(ctx context.Context, m *redsync.Mutex) (func(context.Context) error, error) {
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		ok, err := m.UnlockContext(ctx)
		if err == nil && !ok {
			err = errors.New("redsync: unlock failed")
		}
		return err
	}, nil
}

func (r *redsyncLocker) close() {
	for _, c := range r.clients {
		_ = c.Close()
	}
}

// redislockLocker is bsm/redislock on the first node only: a single-node
// lock, the floor a Redlock client is measured against.
type redislockLocker struct {
	c  *redis.Client
	rl *redislock.Client
}

func openRedislock(urls []string) (locker, error) {
	o, err := redis.ParseURL(urls[0])
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(o)
	return &redislockLocker{c: c, rl: redislock.New(c)}, nil
}

const redislockTTL = 10 * time.Second

func (r *redislockLocker) TryLock(ctx context.Context, key string) (func(context.Context) error, error) {
	l, err := r.rl.Obtain(ctx, key, redislockTTL, nil)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

func (r *redislockLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	l, err := r.rl.Obtain(ctx, key, redislockTTL, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond),
	})
	if err != nil {
		return nil, fmt.Errorf("redislock: %w", err)
	}
	return l.Release, nil
}

func (r *redislockLocker) close() { _ = r.c.Close() }
