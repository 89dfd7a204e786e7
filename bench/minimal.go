package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// minimalLocker is the smallest Redlock that is still one: on every node
// one SET key value NX PX ttl to acquire and one compare-and-delete script
// (EVALSHA) to release, sent to all nodes at once over rueidis clients,
// which pipeline the requests of concurrent goroutines on one connection
// per node by themselves; granted at a majority of OKs within the ttl,
// released everywhere when not. No retry, no node timeout beyond the
// caller's context, no clock drift, no hand-off, no fencing: the floor of
// CPU and latency that a full Redlock client is measured against.
type minimalLocker struct {
	clients []rueidis.Client
	del     *rueidis.Lua
}

// minimalTTL is the minimal reference's lock ttl.
const minimalTTL = 10 * time.Second

// minimalDel deletes KEYS[1] if it holds ARGV[1].
const minimalDel = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`

func openMinimal(urls []string) (locker, error) {
	m := &minimalLocker{del: rueidis.NewLuaScript(minimalDel)}
	for _, u := range urls {
		o, err := rueidis.ParseURL(u)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("minimal: node URL: %w", err)
		}
		o.DisableCache = true
		c, err := rueidis.NewClient(o)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("minimal: node %v: %w", o.InitAddress, err)
		}
		m.clients = append(m.clients, c)
	}
	return m, nil
}

var (
	errMinimalNotAcquired = errors.New("minimal: lock not acquired")
	errMinimalNotHeld     = errors.New("minimal: key not held")
)

// each runs f on every node at once and returns how many returned nil.
func (m *minimalLocker) each(f func(c rueidis.Client) error) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for _, c := range m.clients[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f(c) == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	err0 := f(m.clients[0])
	wg.Wait()
	if err0 == nil {
		ok++
	}
	return ok
}

func (m *minimalLocker) TryLock(ctx context.Context, key string) (func(context.Context) error, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	val := hex.EncodeToString(b[:])
	start := time.Now()
	n := m.each(func(c rueidis.Client) error {
		return c.Do(ctx, c.B().Set().Key(key).Value(val).Nx().PxMilliseconds(minimalTTL.Milliseconds()).Build()).Error()
	})
	release := func(ctx context.Context) error {
		if n := m.each(func(c rueidis.Client) error {
			if n, err := m.del.Exec(ctx, c, []string{key}, []string{val}).AsInt64(); err != nil || n != 1 {
				return errMinimalNotHeld
			}
			return nil
		}); n < len(m.clients)/2+1 {
			return fmt.Errorf("minimal: release confirmed by %d nodes", n)
		}
		return nil
	}
	if n < len(m.clients)/2+1 || time.Since(start) >= minimalTTL {
		_ = release(context.WithoutCancel(ctx))
		return nil, errMinimalNotAcquired
	}
	return release, nil
}

// Lock retries TryLock every 1-2 ms until ctx ends (the reference is for
// throughput; it has no retry policy of its own).
func (m *minimalLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	for {
		r, err := m.TryLock(ctx, key)
		if err == nil || ctx.Err() != nil {
			return r, err
		}
		time.Sleep(time.Millisecond)
	}
}

func (m *minimalLocker) close() {
	for _, c := range m.clients {
		c.Close()
	}
}
