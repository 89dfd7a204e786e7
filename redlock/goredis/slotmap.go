package goredis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/internal/slots"
)

// slotMap is a cluster node's own slot map, by which its masterPipes
// route: CLUSTER NODES of the cluster's servers, read at once and merged
// by config epoch (slots.Owners). go-redis reads its map by CLUSTER
// SLOTS of one server, picked at random; a master cut from its cluster
// while clients still reach it claims its slots after its replica took
// them over, and refuses them (CLUSTERDOWN, in a minority): a map read
// there sent the slots' requests to it until the next read, every few
// seconds (18 and 21 of the acquisitions made every 50 ms in the 12 s
// after a failover failed so, in two runs).
//
// The servers asked are the seeds of the cluster client and every master
// and replica of the map last read, each over a client of the node's own
// (made with the cluster client's settings, masterOptions), which the
// node's Close closes: not through go-redis' cluster client, whose ways
// to ask every server (ForEachShard) first read go-redis' map from one
// server picked at random, and so waited out the request's deadline when
// that was a hung master (a failover followed 2 s late, once in four),
// over connections of the caller's client that the node's Close cannot
// end (Close held 2 s).
type slotMap struct {
	cluster *redis.ClusterClient
	shards  atomic.Pointer[[]slots.Shard] // nil until read once
	failed  atomic.Pointer[error]         // why the last read had no answer; nil once one had
	// askFor bounds the request to each server of one read; slotMapAsk
	// when 0.
	askFor time.Duration

	mu      sync.Mutex // orders the reads' start with close
	closed  bool
	reading chan struct{}     // closed when the read under way ends; nil when none is
	askers  map[string]*asker // by server address
	wg      sync.WaitGroup
}

// asker is the node's client of one server of the cluster for reading
// its CLUSTER NODES, and whether a request of an earlier read is still
// out on it (a hung server is not asked again until it answered or its
// request's deadline passed).
type asker struct {
	c   *redis.Client
	out atomic.Bool
}

// slotMapAsk bounds the request to each server of one read.
const slotMapAsk = time.Second

// slotMapGrace is how long a read waits, after the first server's
// answer, for the others before it merges the answers it has, when
// fewer than a majority of the servers asked answered: a hung server
// then holds the read up that long, not slotMapAsk.
const slotMapGrace = 150 * time.Millisecond

// owner returns the master that serves key's slot as last read, "" when
// the map was not read yet or names none.
func (s *slotMap) owner(key string) string {
	p := s.shards.Load()
	if p == nil {
		return ""
	}
	return slots.Owner(*p, slots.Of(key))
}

// ownerOf returns the master that serves key's slot, reading the map
// first, and waiting for that read (or ctx's end), when it was never
// read: a cluster node routes by no other map. "" when the map names
// none, or none of the servers answered the first read.
func (s *slotMap) ownerOf(ctx context.Context, key string) (string, error) {
	if s.shards.Load() == nil {
		done := s.start()
		if done == nil {
			return "", errClosed
		}
		select {
		case <-done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if s.shards.Load() == nil {
			if p := s.failed.Load(); p != nil {
				return "", *p
			}
		}
	}
	return s.owner(key), nil
}

// readAsync reads the map again in the background, unless a read is
// under way.
func (s *slotMap) readAsync() { s.start() }

// start starts a read of the map unless one is under way, and returns
// the channel closed when the read under way ends; nil once the map is
// stopped.
func (s *slotMap) start() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.reading != nil {
		return s.reading
	}
	done := make(chan struct{})
	s.reading = done
	s.wg.Go(func() {
		s.read()
		s.mu.Lock()
		s.reading = nil
		s.mu.Unlock()
		close(done)
	})
	return done
}

// servers returns the addresses to ask: the cluster client's seeds and
// the masters and replicas of the map last read.
func (s *slotMap) servers() []string {
	addrs := slices.Clone(s.cluster.Options().Addrs)
	if p := s.shards.Load(); p != nil {
		for _, sh := range *p {
			addrs = append(addrs, sh.Master)
			addrs = append(addrs, sh.Replicas...)
		}
	}
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

// askerOf returns the node's client of the server at addr, made on first
// use; nil once the map is stopped, or while a request of an earlier
// read is still out on it.
func (s *slotMap) askerOf(addr string) *asker {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	a := s.askers[addr]
	if a == nil {
		o := masterOptions(s.cluster.Options(), addr) // cluster.go
		o.PoolSize = 1
		a = &asker{c: redis.NewClient(o)}
		if s.askers == nil {
			s.askers = map[string]*asker{}
		}
		s.askers[addr] = a
	}
	if !a.out.CompareAndSwap(false, true) {
		return nil
	}
	return a
}

// read reads the map: CLUSTER NODES of every server (servers), at once,
// then of every server their answers name that was not asked yet
// (slots.Servers), so that a stale seed (a master failed over that came
// back with its old map) does not decide the first map alone. Each round
// merges the answers once every server answered or failed, or a
// majority of them answered, or slotMapGrace after the first answer; a
// server that did not answer by then is left out (its request ends at
// its deadline, or at Close, on its own). The answers are merged over
// the map last read (slots.Merge: a slot's claim stands until one with
// a higher config epoch appears); the map is kept when none answers, and
// failed says why.
func (s *slotMap) read() {
	views := map[string]string{}
	asked := map[string]bool{}
	failed := s.ask(s.servers(), asked, views)
	var more []string
	for _, addr := range slots.Servers(views) {
		if !asked[addr] {
			more = append(more, addr)
		}
	}
	if err := s.ask(more, asked, views); err != nil {
		failed = err
	}
	if len(views) == 0 {
		if failed == nil {
			failed = errors.New("goredis: no server of the cluster answered CLUSTER NODES")
		}
		s.failed.Store(&failed)
		return
	}
	s.failed.Store(nil)
	var prev []slots.Shard
	if p := s.shards.Load(); p != nil {
		prev = *p
	}
	shards := slots.Merge(prev, views)
	s.shards.Store(&shards)
}

// ask asks each server of addrs for its CLUSTER NODES, at once, each
// bounded by slotMapAsk (s.askFor), notes it in asked, and puts the
// answers in views, as read says; it returns the last error of a server.
func (s *slotMap) ask(addrs []string, asked map[string]bool, views map[string]string) (last error) {
	type answer struct {
		addr, txt string
		err       error
	}
	var (
		to  []string
		ask []*asker
	)
	for _, addr := range addrs {
		asked[addr] = true
		if a := s.askerOf(addr); a != nil {
			to, ask = append(to, addr), append(ask, a)
		}
	}
	answers := make(chan answer, len(to))
	for i, a := range ask {
		s.wg.Go(func() {
			defer a.out.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(s.askFor, slotMapAsk))
			defer cancel()
			txt, err := a.c.ClusterNodes(ctx).Result()
			answers <- answer{to[i], txt, err}
		})
	}
	got := 0
	var grace <-chan time.Time
wait:
	for range to {
		select {
		case a := <-answers:
			if a.err != nil {
				last = fmt.Errorf("goredis: CLUSTER NODES on %s: %w", a.addr, a.err)
				continue
			}
			views[a.addr] = a.txt
			got++
		case <-grace:
			break wait
		}
		if 2*got > len(to) {
			break
		}
		if grace == nil {
			t := time.NewTimer(slotMapGrace)
			defer t.Stop()
			grace = t.C
		}
	}
	return last
}

// stop starts no other read and closes the node's clients of the
// servers, which ends the requests still out; masterPipes.wait waits for
// them.
func (s *slotMap) stop() {
	s.mu.Lock()
	s.closed = true
	all := s.askers
	s.askers = nil
	s.mu.Unlock()
	for _, a := range all {
		_ = a.c.Close()
	}
}
