package goredis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/internal/slots"
)

// slotMap is a cluster node's own slot map, by which its masterPipes
// route: CLUSTER NODES of every server that go-redis' client knows, read
// at once and merged by config epoch (slots.Owners). go-redis reads its
// map by CLUSTER SLOTS of one server, picked at random; a master cut from
// its cluster while clients still reach it claims its slots after its
// replica took them over, and refuses them (CLUSTERDOWN, in a minority):
// a map read there sent the slots' requests to it until the next read,
// every few seconds (18 and 21 of the acquisitions made every 50 ms in
// the 12 s after a failover failed so, in two runs).
type slotMap struct {
	cluster *redis.ClusterClient
	shards  atomic.Pointer[[]slots.Shard] // nil until read once
	reading atomic.Bool

	mu     sync.Mutex // orders the reads' start with close
	closed bool
	wg     sync.WaitGroup
}

// slotMapAsk bounds the request to each server of one read.
const slotMapAsk = time.Second

// owner returns the master that serves key's slot as last read, "" when
// the map was not read yet or names none.
func (s *slotMap) owner(key string) string {
	p := s.shards.Load()
	if p == nil {
		return ""
	}
	return slots.Owner(*p, slots.Of(key))
}

// readAsync reads the map again in the background, unless a read is
// under way.
func (s *slotMap) readAsync() {
	if !s.reading.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Go(func() {
		defer s.reading.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 2*slotMapAsk)
		defer cancel()
		s.read(ctx)
	})
}

// read reads the map: CLUSTER NODES of every server of go-redis' map
// (masters and replicas), at once; a server that does not answer is left
// out, and the map is kept when none answers.
func (s *slotMap) read(ctx context.Context) {
	var (
		mu    sync.Mutex
		views = map[string]string{}
	)
	_ = s.cluster.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		actx, cancel := context.WithTimeout(ctx, slotMapAsk)
		defer cancel()
		if txt, err := c.ClusterNodes(actx).Result(); err == nil {
			mu.Lock()
			views[c.Options().Addr] = txt
			mu.Unlock()
		}
		return nil
	})
	if len(views) > 0 {
		shards := slots.Owners(views)
		s.shards.Store(&shards)
	}
}

// stop starts no other read; masterPipes.wait waits for one under way.
func (s *slotMap) stop() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
