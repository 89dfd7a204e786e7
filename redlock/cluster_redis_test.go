package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
	"dlm/redlock/scripts"
)

// clusterNodes starts n Redlock nodes that are each a Redis Cluster of
// masters masters, and returns their URLs and the clusters.
func clusterNodes(t *testing.T, n, masters int) ([]string, []*redlocktest.RedisCluster) {
	t.Helper()
	cs := redlocktest.StartRedisClusters(t, n, masters, 0)
	urls := make([]string, n)
	for i, c := range cs {
		urls[i] = c.URL()
	}
	return urls, cs
}

// Every capability over nodes that are Redis Clusters, with both
// adapters' clients on the same nodes: locks and fencing, sets across
// slots, read-write locks, records and elections, handles passed between
// adapters, and the hand-off over sharded pub/sub.
func TestClusterNodesEveryCapability(t *testing.T) {
	urls, cs := clusterNodes(t, 3, 2)
	clients := map[string]*redlock.Client{}
	for _, a := range adapters() {
		clients[a.name] = dialURLs(t, a, urls, redlock.WithFencing(), redlock.WithNodeTimeout(500*time.Millisecond),
			redlock.WithTTL(5*time.Second))
	}
	ctx := t.Context()
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		c := clients[a.name]
		other := clients["goredis"]
		if a.name == "goredis" {
			other = clients["rueidis"]
		}
		r := a.name + ":" // resources of this subtest
		l, err := c.TryLock(ctx, r+"plain")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.TryLock(ctx, r+"plain"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("a second client locked a held resource: %v", err)
		}
		if err := l.Extend(ctx); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		first := l.Token()
		h := l.Handle()
		resumed, err := other.Resume(ctx, h)
		if err != nil {
			t.Fatalf("Resume by the other adapter: %v", err)
		}
		if err := resumed.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of the resumed lock: %v", err)
		}
		l2, err := c.TryLock(ctx, r+"plain")
		if err != nil || l2.Token() <= first {
			t.Fatalf("relock = %v, token %d after %d; want a larger token", err, l2.Token(), first)
		}
		_ = l2.Unlock(ctx)

		set := []string{r + "a", r + "b", r + "c", r + "d"}
		s, err := c.TryLockAll(ctx, set)
		if err != nil {
			t.Fatalf("TryLockAll across slots: %v", err)
		}
		if _, err := other.TryLockAll(ctx, []string{r + "d", r + "e"}); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("an overlapping set was granted: %v", err)
		}
		if _, err := other.TryLock(ctx, r+"e"); err != nil {
			t.Fatalf("a refused set left %se held: %v", r, err)
		}
		if err := s.Extend(ctx); err != nil {
			t.Fatalf("Extend of a set: %v", err)
		}
		if err := s.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of a set: %v", err)
		}

		r1, err := c.TryRLock(ctx, r+"rw")
		if err != nil {
			t.Fatal(err)
		}
		r2, err := other.TryRLock(ctx, r+"rw")
		if err != nil {
			t.Fatalf("a second reader was refused: %v", err)
		}
		if _, err := c.TryWLock(ctx, r+"rw"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("a writer joined readers: %v", err)
		}
		_ = r1.Unlock(ctx)
		_ = r2.Unlock(ctx)
		w, err := c.TryWLock(ctx, r+"rw")
		if err != nil || w.Token() == 0 {
			t.Fatalf("writer after the readers = %v, token %d", err, w.Token())
		}
		_ = w.Unlock(ctx)

		e, err := election.New(c, r+"e")
		if err != nil {
			t.Fatal(err)
		}
		lead, err := e.Campaign(ctx, "me")
		if err != nil {
			t.Fatal(err)
		}
		oe, _ := election.New(other, r+"e")
		if got, ok, err := oe.Leader(ctx); err != nil || !ok || got.ID != "me" || got.Term != lead.Term() {
			t.Fatalf("leader read by the other adapter = %+v, %v, %v; want me, term %d", got, ok, err, lead.Term())
		}
		_ = lead.Resign(ctx)

		// The hand-off: the waiter's retry is 20s away, so only the
		// release announced on the key's shard can wake it soon.
		held, err := c.TryLock(ctx, r+"h")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			wl, err := other.Lock(ctx, r+"h", redlock.WithRetryDelay(20*time.Second, 20*time.Second))
			if err == nil {
				_ = wl.Unlock(context.WithoutCancel(ctx))
			}
			got <- err
		}()
		ch := scripts.ChannelPrefix + redlock.HashTaggedKey(redlock.DefaultKeyPrefix, r+"h")
		redlocktest.Eventually(t, 10*time.Second, func() bool { return shardSubscribers(cs, ch) > 0 },
			"the waiter never subscribed to %s", ch)
		_ = held.Unlock(ctx)
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter was not woken by the announced release within 10s (its retry was 20s away)")
		}
	})
	t.Run("FactsPerMaster", func(t *testing.T) { clusterFactsPerMaster(t, urls, cs) }) // nodefacts_cluster_test.go
}

// shardSubscribers counts the sharded subscribers of ch on every master of
// cs.
func shardSubscribers(cs []*redlocktest.RedisCluster, ch string) int64 {
	var n int64
	for _, c := range cs {
		for _, m := range c.Masters() {
			res, err := m.Client().Do(context.Background(), "PUBSUB", "SHARDNUMSUB", ch).Slice()
			if err == nil && len(res) == 2 {
				k, _ := res[1].(int64)
				n += k
			}
		}
	}
	return n
}

// Two adapters' clients lock random overlapping sets of six resources over
// three cluster nodes, where the sets span slots: no two holders ever hold
// a resource at once, and every grant of a resource has a larger token
// than the one before.
func TestClusterNodesOverlappingSets(t *testing.T) {
	urls, _ := clusterNodes(t, 3, 2)
	var clients []*redlock.Client
	for _, a := range adapters() {
		clients = append(clients, dialURLs(t, a, urls, redlock.WithFencing(), redlock.WithNodeTimeout(500*time.Millisecond),
			redlock.WithTTL(5*time.Second), redlock.WithRetryDelay(time.Millisecond, 10*time.Millisecond)))
	}
	names := []string{"a", "b", "c", "d", "e", "f"}
	var mu sync.Mutex
	holder := map[string]int{}
	last := map[string]uint64{}
	var failures []string
	const workers, each = 6, 12
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			c := clients[w%len(clients)]
			for i := 0; i < each && time.Now().Before(deadline); i++ {
				set := slices.Clone(names)
				rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
				set = set[:2+rng.IntN(2)]
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				l, err := c.LockAll(ctx, set)
				cancel()
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("worker %d: LockAll(%q): %v", w, set, err))
					mu.Unlock()
					return
				}
				mu.Lock()
				for _, r := range set {
					if holder[r] != 0 {
						failures = append(failures, fmt.Sprintf("worker %d got %q while worker %d holds %s", w, set, holder[r]-1, r))
					}
					if l.Token() <= last[r] {
						failures = append(failures, fmt.Sprintf("token %d for %s after %d", l.Token(), r, last[r]))
					}
					holder[r], last[r] = w+1, l.Token()
				}
				mu.Unlock()
				time.Sleep(time.Millisecond) // hold it a moment
				mu.Lock()
				for _, r := range set {
					holder[r] = 0
				}
				mu.Unlock()
				_ = l.Unlock(t.Context())
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
}

// A master of a cluster node that is lost takes only its slots' locks down
// on that node, as long as the other masters are a majority of the
// cluster's (Redis Cluster stops a minority): over a client of that one
// node, the resources served by the other masters still lock, the lost
// master's fail, with both adapters.
func TestClusterNodeLosesOnlyTheSlotsOfALostMaster(t *testing.T) {
	c := redlocktest.StartRedisCluster(t, 3, 0)
	c.Masters()[0].Kill()
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := dialURLs(t, a, []string{c.URL()}, redlock.WithNodeTimeout(500*time.Millisecond))
		var up, down int
		for i := 0; i < 40; i++ {
			r := fmt.Sprintf("%s-%d", a.name, i)
			slot, err := c.Masters()[2].Client().Do(t.Context(), "CLUSTER", "KEYSLOT", redlock.HashTaggedKey(redlock.DefaultKeyPrefix, r)).Int()
			if err != nil {
				t.Fatal(err)
			}
			l, err := cl.TryLock(t.Context(), r)
			switch lost := c.MasterOf(slot) == 0; {
			case lost && err == nil:
				t.Fatalf("%s, on the lost master's slots, was locked", r)
			case !lost && err != nil:
				t.Fatalf("%s, on the other master, was not locked: %v", r, err)
			case lost:
				down++
			default:
				up++
				_ = l.Unlock(t.Context())
			}
		}
		if up == 0 || down == 0 {
			t.Fatalf("resources on the live master %d, on the lost one %d: want some of each", up, down)
		}
	})
}

// A cluster node's release watch that unwatches a key and watches it again
// at once hears its next release: the unsubscription never overtakes the
// new subscription.
func TestClusterWatchAgainHearsTheRelease(t *testing.T) {
	c := redlocktest.StartRedisCluster(t, 3, 0)
	for _, dial := range []struct {
		name string
		node func(string) (adapter.HandoffNode, error)
	}{
		{"goredis", func(u string) (adapter.HandoffNode, error) { return goredis.DialNode(u) }},
		{"rueidis", func(u string) (adapter.HandoffNode, error) { return rueidis.DialNode(u) }},
	} {
		t.Run(dial.name, func(t *testing.T) {
			n, err := dial.node(c.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer n.(interface{ Close() error }).Close()
			heard := make(chan string, 16)
			w, err := n.WatchReleases(func(key, value string) { heard <- key + "=" + value })
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			ctx := t.Context()
			for i := 0; i < 10; i++ {
				key := redlock.HashTaggedKey(redlock.DefaultKeyPrefix, fmt.Sprintf("w%d", i%3))
				if err := w.Watch(ctx, key); err != nil {
					t.Fatal(err)
				}
				if err := w.Unwatch(ctx, key); err != nil {
					t.Fatal(err)
				}
				if err := w.Watch(ctx, key); err != nil {
					t.Fatal(err)
				}
				v := fmt.Sprintf("v%d", i)
				if ok, err := n.Acquire(ctx, key, v, time.Minute); !ok || err != nil {
					t.Fatalf("Acquire: %v, %v", ok, err)
				}
				if ok, err := n.ReleaseAnnounce(ctx, key, v); !ok || err != nil {
					t.Fatalf("ReleaseAnnounce: %v, %v", ok, err)
				}
				select {
				case got := <-heard:
					if got != key+"="+v {
						t.Fatalf("heard %q, want %q", got, key+"="+v)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("round %d: the release of %s after Unwatch and Watch was not heard", i, key)
				}
				if err := w.Unwatch(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
