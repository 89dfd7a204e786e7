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
// one SET key value NX PX ttl to acquire and one EVALSHA of a
// compare-and-delete script to release, auto-pipelined: one goroutine per
// node sends whatever requests queued up meanwhile, from any goroutine, in
// one DoMulti (one write, one round trip). Granted when a majority set the
// key within the ttl (every node's answer is awaited), released everywhere
// when not. No retry, no node timeout beyond the caller's context, no
// clock drift, no hand-off, no fencing, no observer: the floor of CPU and
// latency a full Redlock client is measured against.
type minimalLocker struct {
	nodes []*minimalNode
	wg    sync.WaitGroup
}

// minimalNode is one node's client and request queue.
type minimalNode struct {
	c   rueidis.Client
	q   chan minimalReq
	sha string
}

// minimalReq is one request and where its outcome goes.
type minimalReq struct {
	cmd     rueidis.Completed
	release bool // EVALSHA: ok when it deleted; else SET NX: ok when set
	done    chan<- bool
}

// minimalTTL is the minimal reference's lock ttl.
const minimalTTL = 10 * time.Second

// minimalDel deletes KEYS[1] if it holds ARGV[1].
const minimalDel = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`

// minimalBatch bounds the requests of one DoMulti.
const minimalBatch = 512

var (
	errMinimalNotAcquired = errors.New("minimal: lock not acquired")
	errMinimalNotHeld     = errors.New("minimal: release confirmed by no majority")
)

func openMinimal(urls []string) (locker, error) {
	m := &minimalLocker{}
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
		sha, err := c.Do(context.Background(), c.B().ScriptLoad().Script(minimalDel).Build()).ToString()
		if err != nil {
			c.Close()
			m.close()
			return nil, fmt.Errorf("minimal: SCRIPT LOAD on %v: %w", o.InitAddress, err)
		}
		n := &minimalNode{c: c, q: make(chan minimalReq, 4*minimalBatch), sha: sha}
		m.nodes = append(m.nodes, n)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			n.run()
		}()
	}
	return m, nil
}

// run sends the queued requests in batches until the queue closes.
func (n *minimalNode) run() {
	reqs := make([]minimalReq, 0, minimalBatch)
	cmds := make(rueidis.Commands, 0, minimalBatch)
	for r := range n.q {
		reqs, cmds = append(reqs[:0], r), append(cmds[:0], r.cmd)
	gather:
		for len(reqs) < minimalBatch {
			select {
			case r, ok := <-n.q:
				if !ok {
					break gather
				}
				reqs, cmds = append(reqs, r), append(cmds, r.cmd)
			default:
				break gather
			}
		}
		for i, res := range n.c.DoMulti(context.Background(), cmds...) {
			ok := res.Error() == nil
			if reqs[i].release {
				d, err := res.AsInt64()
				ok = err == nil && d == 1
			}
			reqs[i].done <- ok
		}
	}
}

// all sends one request per node, built by cmd, and returns how many
// succeeded once every node answered.
func (m *minimalLocker) all(release bool, cmd func(n *minimalNode) rueidis.Completed) int {
	done := make(chan bool, len(m.nodes))
	for _, n := range m.nodes {
		n.q <- minimalReq{cmd: cmd(n), release: release, done: done}
	}
	ok := 0
	for range m.nodes {
		if <-done {
			ok++
		}
	}
	return ok
}

func (m *minimalLocker) TryLock(_ context.Context, key string) (func(context.Context) error, error) {
	val := minimalValue()
	return minimalTry(len(m.nodes), func() int {
		return m.all(false, func(n *minimalNode) rueidis.Completed {
			return n.c.B().Set().Key(key).Value(val).Nx().PxMilliseconds(minimalTTL.Milliseconds()).Build()
		})
	}, func(context.Context) int {
		return m.all(true, func(n *minimalNode) rueidis.Completed {
			return n.c.B().Evalsha().Sha1(n.sha).Numkeys(1).Key(key).Arg(val).Build()
		})
	})
}

// Lock retries TryLock every millisecond until ctx ends (the reference is
// for throughput; it has no retry policy of its own).
func (m *minimalLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	return minimalRetry(ctx, key, m.TryLock)
}

// minimalValue returns a fresh lock value: 16 random bytes, in hex.
func minimalValue() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// minimalTry is one attempt of a minimal Redlock over nodes nodes: acquire
// sets the key on every node and returns on how many it did; release
// deletes it where it holds the value and returns on how many it did.
// Granted when a majority set the key within the ttl; released everywhere
// when not.
func minimalTry(nodes int, acquire func() int, release func(context.Context) int) (func(context.Context) error, error) {
	start := time.Now()
	n := acquire()
	rel := func(ctx context.Context) error {
		if release(ctx) < nodes/2+1 {
			return errMinimalNotHeld
		}
		return nil
	}
	if n < nodes/2+1 || time.Since(start) >= minimalTTL {
		_ = rel(context.Background())
		return nil, errMinimalNotAcquired
	}
	return rel, nil
}

// minimalRetry retries try every millisecond until it succeeds or ctx
// ends.
func minimalRetry(ctx context.Context, key string, try func(context.Context, string) (func(context.Context) error, error)) (func(context.Context) error, error) {
	for {
		r, err := try(ctx, key)
		if err == nil || ctx.Err() != nil {
			return r, err
		}
		time.Sleep(time.Millisecond)
	}
}

func (m *minimalLocker) close() {
	for _, n := range m.nodes {
		close(n.q)
	}
	m.wg.Wait()
	for _, n := range m.nodes {
		n.c.Close()
	}
}
