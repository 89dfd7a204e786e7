package redlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A failover made as the docs advise (a replica with
// cluster-replica-no-failover yes, promoted by hand after the ttl, AOF
// appendfsync always everywhere) must not repeat a fencing token, although
// replication is asynchronous: the promoted replica may lack the master's
// last fence raise while it holds the resource's floor key, replicated
// long before. The test makes the replica lack that raise as the checker
// makes a replica lack a lock key: it writes back, on the promoted
// replica, the fence value the replica held before the raise (loopback
// replication always delivers the raise before the master can be
// stopped). The next grant must still be above every earlier token.
func TestClusterFailoverByHandKeepsTokensIncreasing(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		ctx := t.Context()
		cl := redlocktest.StartRedisCluster(t, 1, 1, redlocktest.WithPersistence())
		const ttl = 3 * time.Second
		// Each grant is a Lock bounded at 30s, not a TryLock, and the
		// releases wait up to 10s rather than 1s: the one node of each
		// client must answer every request, and on a loaded machine a
		// healthy redis-server answers after more than a second at times
		// (a release after 1.26s at load 30, TestTokensIncreaseInGrantOrder),
		// which a single attempt or a 1s release reports as a failure. The
		// test is about the tokens of a failover by hand.
		opts := []redlock.Option{redlock.WithFencing(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(500 * time.Millisecond),
			redlock.WithReleaseTimeout(10 * time.Second)}
		c := dialURLs(t, a, []string{cl.URL()}, opts...)
		const resource = "failover"
		fenceKey := redlock.HashTaggedKey(redlock.DefaultFencePrefix, resource)
		master, replica := cl.Masters()[0], cl.Replicas(0)[0]

		grant := func(c *redlock.Client) uint64 {
			t.Helper()
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			l, err := c.Lock(lctx, resource)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			return l.Token()
		}
		first := grant(c)
		// The replica holds the floor key and the fence of the first
		// grant; the second grant's raise is the one it will miss.
		waitReplicated(ctx, t, master.Client())
		second := grant(c)
		waitReplicated(ctx, t, master.Client())

		master.Stop()
		// By hand, after the ttl: every lock the master granted expired.
		time.Sleep(ttl + ttl/4)
		if err := cl.Promote(ctx, 0); err != nil {
			t.Fatal(err)
		}
		// What asynchronous replication may leave: the raise of the
		// second grant never reached the replica.
		if err := replica.Client().Set(ctx, fenceKey, strconv.FormatUint(first, 10), 0).Err(); err != nil {
			t.Fatal(err)
		}
		after := dialURLs(t, a, []string{"redis://" + replica.Addr() + "?cluster=true"}, opts...)
		third := grant(after)
		if third <= second {
			t.Fatalf("tokens %d, %d, then %d after a failover by hand: want every token above the earlier ones", first, second, third)
		}
	})
}

// waitReplicated waits until every replica of m acknowledged m's writes
// so far (WAIT).
func waitReplicated(ctx context.Context, t *testing.T, m *redis.Client) {
	t.Helper()
	n, err := m.Do(ctx, "WAIT", 1, 10000).Int()
	if err != nil || n < 1 {
		t.Fatalf("WAIT on %s = %d, %v: want the replica's acknowledgement", m.Options().Addr, n, err)
	}
}

// With hash tags (a cluster node), every resource keeps a floor key beside
// its fence key; WithFenceRetention must bound the memory of both: no key
// under the fence prefix may outlive the retention.
func TestClusterFenceRetentionBoundsFloorKeys(t *testing.T) {
	cl := redlocktest.StartRedisCluster(t, 2, 0)
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		ctx := t.Context()
		const retention = time.Hour
		c := dialURLs(t, a, []string{cl.URL()}, redlock.WithFencing(), redlock.WithFenceRetention(retention),
			redlock.WithFencePrefix(a.name+":fence:"))
		for i := range 20 {
			l, err := c.TryLock(ctx, "r"+strconv.Itoa(i))
			if err != nil {
				t.Fatalf("TryLock: %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
		}
		keys, err := cl.Inspector().Keys(ctx, a.name+":fence:")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 40 {
			t.Fatalf("%d keys under the fence prefix, want 20 fence and 20 floor keys: %q", len(keys), keys)
		}
		for _, k := range keys {
			d, err := cl.Client().PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if d <= 0 || d > retention {
				t.Errorf("key %q expires in %v, want within the retention %v", k, d, retention)
			}
		}
	})
}

// A floor key written by an earlier version (a bare token, no replication
// id) counts as missing once: the next token is a repair, above the clock
// and the fence, and the floor then carries the node's replication id, so
// that the grants after it count up from there.
func TestFenceFloorOfAnEarlierVersion(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		ctx := t.Context()
		cl, c := cluster(t, a, 1, redlock.WithFencing())
		srv := cl.Servers[0].Client()
		if err := srv.Set(ctx, redlock.DefaultFencePrefix, "5", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Set(ctx, redlock.DefaultFencePrefix+"r", "7", 0).Err(); err != nil {
			t.Fatal(err)
		}
		before := uint64(time.Now().UnixMicro())
		var tokens []uint64
		for range 2 {
			l, err := c.TryLock(ctx, "r")
			if err != nil {
				t.Fatalf("TryLock: %v", err)
			}
			tokens = append(tokens, l.Token())
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if tokens[0] < before || tokens[1] != tokens[0]+1 {
			t.Fatalf("tokens %v after an earlier version's floor (clock %d before): want a repair above the clock, then a count", tokens, before)
		}
		floor, err := srv.Get(ctx, redlock.DefaultFencePrefix).Result()
		if err != nil || !strings.HasPrefix(floor, strconv.FormatUint(tokens[0], 10)+" ") {
			t.Fatalf("floor key %q, %v; want the repair's token and the replication id", floor, err)
		}
	})
}
