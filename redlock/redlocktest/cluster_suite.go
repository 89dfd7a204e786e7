package redlocktest

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/slots"
	"dlm/redlock/redisproc"
)

// ClusterNodeDialer dials an adapter's node over a Redis Cluster from its
// node URL (cluster=true).
type ClusterNodeDialer func(url string) (adapter.HandoffNode, error)

// RunClusterMigration runs, over real Redis Clusters of two masters, what
// a cluster node of any adapter must do while slots move. channelPrefix is
// the adapter's prefix of release announcements, whose shard channel's
// slot is the one moved.
//
//   - WatchFollowsASlotMigration: the release subscription outlives the
//     migration of its key's slot (the master that gave the slot away ends
//     the subscriptions to its shard channels with sunsubscribe, and the
//     node subscribes again on the slot's new master).
//   - FollowsRedirections: a request the master did not run, after its
//     slot moved (MOVED) or while it moves (ASK, for a key the old master
//     no longer has), runs on the slot's new master at once, with no error.
func RunClusterMigration(t *testing.T, dial ClusterNodeDialer, channelPrefix string) {
	t.Run("WatchFollowsASlotMigration", func(t *testing.T) {
		cl := StartRedisCluster(t, 2, 0)
		n, err := dial(cl.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeNode(n) })
		heard := make(chan string, 100)
		w, err := n.WatchReleases(func(_, value string) {
			select {
			case heard <- value:
			default:
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		ctx := t.Context()
		const key = "{moving}"
		if err := w.Watch(ctx, key); err != nil {
			t.Fatal(err)
		}
		// hears reports whether a release of key announced now reaches the
		// watch within d.
		round := 0
		hears := func(d time.Duration) bool {
			round++
			value := "v" + strconv.Itoa(round)
			actx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			if ok, err := n.Acquire(actx, key, value, time.Minute); !ok || err != nil {
				return false
			}
			if ok, err := n.ReleaseAnnounce(actx, key, value); !ok || err != nil {
				return false
			}
			for {
				select {
				case v := <-heard:
					if v == value {
						return true
					}
				case <-actx.Done():
					return false
				}
			}
		}
		if !hears(10 * time.Second) {
			t.Fatal("a release announced before the migration was not heard")
		}
		slot := slots.Of(channelPrefix + key)
		if err := cl.MoveSlot(ctx, slot, 1-cl.MasterOf(slot)); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(15 * time.Second); !hears(time.Second); {
			if time.Now().After(end) {
				t.Fatalf("no release of %s heard in 15 s after its slot %d moved to another master", key, slot)
			}
		}
	})
	t.Run("FollowsRedirections", func(t *testing.T) {
		cl := StartRedisCluster(t, 2, 0)
		n, err := dial(cl.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeNode(n) })
		ctx := t.Context()
		const moved, asked = "{redirected}1", "{redirected}2"
		if ok, err := n.Acquire(ctx, moved, "v", time.Minute); !ok || err != nil {
			t.Fatalf("Acquire before the slot moved = %v, %v; want true", ok, err)
		}
		slot := slots.Of(moved)
		from := cl.MasterOf(slot)
		to := 1 - from
		if err := cl.MoveSlot(ctx, slot, to); err != nil {
			t.Fatal(err)
		}
		// Back, half way, before the node read the slot map again: the slot
		// is MIGRATING on its owner and IMPORTING on the other master. A key
		// the owner does not have takes two hops: MOVED from the master the
		// node knew to the owner, then ASK to the importing master.
		src, dst := cl.Masters()[to], cl.Masters()[from]
		srcID, _ := src.Client().Do(ctx, "CLUSTER", "MYID").Text()
		dstID, _ := dst.Client().Do(ctx, "CLUSTER", "MYID").Text()
		if err := dst.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err(); err != nil {
			t.Fatal(err)
		}
		if err := src.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := n.Acquire(ctx, asked, "v", time.Minute); !ok || err != nil {
			t.Fatalf("Acquire of a key asked on the importing master (MOVED, then ASK) = %v, %v; want true", ok, err)
		}
		// A key the owner has runs there (MOVED, or no redirection once the
		// node read the slot map again).
		if ok, err := n.Release(ctx, moved, "v"); !ok || err != nil {
			t.Fatalf("Release after the slot moved (MOVED) = %v, %v; want true", ok, err)
		}
		p := dst.Client().Pipeline()
		p.Do(ctx, "ASKING")
		got := p.Get(ctx, asked)
		_, _ = p.Exec(ctx)
		if v, err := got.Result(); v != "v" || err != nil {
			t.Errorf("GET %s on the importing master = %q, %v; want v", asked, v, err)
		}
	})
}

// RunClusterFailover runs, over a real Redis Cluster of one master and its
// replica, what a cluster node of any adapter must do when the master dies
// and its replica takes its slots: the node learns the replica's address
// while the master is up (knows reports whether the adapter's client has
// an address in its slot map), and its requests for those slots reach the
// promoted replica within a few seconds (the bound is generous for a
// loaded machine). A replica joins the slot map only once it synced
// (CLUSTER SLOTS lists it once it is online), so a client that read the
// map before, and reads it again only on MOVED or ASK or a failed request,
// never learns it and cannot reach it once its master is dead.
// FollowsAFailoverRightAfterItsFirstRequest kills the master at once after
// the node's first request, without waiting for the adapter's client to
// list the replica: the map that first request read names it, and the
// node must find the promoted replica through it.
func RunClusterFailover(t *testing.T, dial ClusterNodeDialer, knows func(n adapter.HandoffNode, addr string) bool) {
	t.Run("FollowsAFailover", func(t *testing.T) {
		cl := StartRedisCluster(t, 1, 1)
		n, err := dial(cl.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeNode(n) })
		ctx := t.Context()
		if ok, err := n.Acquire(ctx, "{before}", "v", time.Minute); !ok || err != nil {
			t.Fatalf("Acquire before the failover = %v, %v; want true", ok, err)
		}
		// The replica joined the slot map once it synced: the node learns its
		// address while the master is up, or it could not reach it after.
		replica := cl.Replicas(0)[0].Addr()
		for end := time.Now().Add(30 * time.Second); !knows(n, replica); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("the node did not learn the address of the master's replica %s in 30 s", replica)
			}
		}
		killAndPromote(t, cl, n)
	})
	// The same, with the master stopped at once after the node's first
	// request: the node's client may not list the replica yet (rueidis
	// lists a replica once CLUSTER SHARDS calls it online, and reads the
	// map again only from the servers it lists), but the cluster's own
	// map named it when the node's first request read it. Once the master
	// is dead, that map is the node's only way to the promoted replica.
	t.Run("FollowsAFailoverRightAfterItsFirstRequest", func(t *testing.T) {
		cl := StartRedisCluster(t, 1, 1)
		n, err := dial(cl.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeNode(n) })
		if ok, err := n.Acquire(t.Context(), "{before}", "v", time.Minute); !ok || err != nil {
			t.Fatalf("Acquire before the failover = %v, %v; want true", ok, err)
		}
		killAndPromote(t, cl, n)
	})
}

// killAndPromote kills the only master of cl, sends n one request to it,
// promotes its replica (CLUSTER FAILOVER TAKEOVER, as an operator does)
// and fails t unless n's acquisitions succeed within a generous bound.
func killAndPromote(t *testing.T, cl *RedisCluster, n adapter.HandoffNode) {
	t.Helper()
	ctx := t.Context()
	cl.Masters()[0].Kill()
	// A request to the dead master: the node learns of the failure.
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	_, _ = n.Acquire(rctx, "{during}", "v", time.Minute)
	cancel()
	if err := cl.Promote(ctx, 0); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	const bound = 10 * time.Second
	for {
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		ok, err := n.Acquire(rctx, "{after}", "v", time.Minute)
		cancel()
		if ok && err == nil {
			t.Logf("followed the failover %v after the promotion", time.Since(promoted).Round(time.Millisecond))
			return
		}
		if time.Since(promoted) > bound {
			t.Fatalf("the node still fails %v after the replica's promotion: %v, %v; want it to follow the failover", bound, ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RunClusterFailoverOfAFrozenMaster runs, over a real Redis Cluster of two
// masters with a replica each, what a cluster node of any adapter must do
// when a master hangs (SIGSTOP: it takes connections and never answers)
// and its replica takes its slots over (CLUSTER FAILOVER TAKEOVER, as an
// operator does): the node's requests for those slots, which time out on
// the frozen master, reach the promoted replica within followFrozen. A
// frozen master neither refuses nor closes a connection, so nothing but
// the timeouts tells the node that its map is out of date; the dialer
// should not read the slot map on a timer more often than every minute,
// so that what is under test is the node's answer to its timeouts. knows
// reports whether the adapter's client has an address in its slot map:
// the node is dialled once the replica is in the cluster's, and must know
// it before the master freezes.
func RunClusterFailoverOfAFrozenMaster(t *testing.T, dial ClusterNodeDialer, knows func(n adapter.HandoffNode, addr string) bool) {
	// The replicas sync at once (Redis waits 5 s by default for more
	// replicas to share a diskless sync).
	cl := StartRedisCluster(t, 2, 1, WithArgs("--repl-diskless-sync-delay", "0"))
	ctx := t.Context()
	const key = "{frozen}"
	i := cl.MasterOf(slots.Of(key))
	m, r := cl.Masters()[i], cl.Replicas(i)[0]
	// A replica is in a server's CLUSTER SLOTS once the server heard that
	// its replication offset is not 0: a write gets it there before the
	// master's first ping to its replicas (10 s).
	if err := m.Client().Do(ctx, "SET", key+"sync", "1").Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range cl.Masters() {
		for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			txt, err := p.Client().Do(ctx, "CLUSTER", "SLOTS").Slice()
			if err == nil && strings.Contains(fmt.Sprint(txt), " "+strconv.Itoa(r.Port())+" ") {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("the replica %s is not in %s's CLUSTER SLOTS 30 s after the cluster started: %v", r.Addr(), p.Addr(), err)
			}
		}
	}
	n, err := dial(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeNode(n) })
	if ok, err := n.Acquire(ctx, key+"before", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire before the failover = %v, %v; want true", ok, err)
	}
	for end := time.Now().Add(30 * time.Second); !knows(n, r.Addr()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the node did not learn the address of the master's replica %s in 30 s", r.Addr())
		}
	}
	m.Freeze()
	t.Cleanup(m.Thaw)
	takeOver(t, r)
	promoted := time.Now()
	for k := 0; ; k++ {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		ok, err := n.Acquire(rctx, key+strconv.Itoa(k), "v", time.Minute)
		cancel()
		if ok && err == nil {
			t.Logf("followed the failover of a frozen master %v after the promotion", time.Since(promoted).Round(time.Millisecond))
			return
		}
		if time.Since(promoted) > followFrozen {
			t.Fatalf("the node still fails %v after the replica's promotion (its master frozen): %v, %v; want it to follow the failover on its requests' timeouts", followFrozen, ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// followFrozen bounds RunClusterFailoverOfAFrozenMaster's follow: a
// request's timeout (300 ms) and a read of the slot map, with room for a
// loaded machine.
const followFrozen = 5 * time.Second

// RunClusterFailoverPastACutMaster runs, over a real Redis Cluster of three
// masters with a replica each, what a cluster node of any adapter must do
// when a master is cut from its cluster (bus and replication) while the
// node still reaches it, and its replica takes its slots over (CLUSTER
// FAILOVER TAKEOVER, as an operator does): the cut master, in a minority,
// answers CLUSTERDOWN and still claims the slots in its own slot map. The
// node must send the slot's requests to the promoted replica within a
// few seconds, whichever server it reads the slot map from.
func RunClusterFailoverPastACutMaster(t *testing.T, dial ClusterNodeDialer) {
	Require(t)
	ctx := t.Context()
	cl, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, Partitionable: true,
		NodeTimeout: time.Second, ReplicaNoFailover: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	n, err := dial(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeNode(n) })
	const key = "{cut}"
	if ok, err := n.Acquire(ctx, key+"before", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire before the cut = %v, %v; want true", ok, err)
	}
	i := cl.MasterOf(slots.Of(key))
	m, r := cl.Masters()[i], cl.Replicas(i)[0]
	if err := cl.Isolate(m); err != nil {
		t.Fatal(err)
	}
	// The cut master finds itself in a minority after the node timeout,
	// and refuses its slots from then on.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := m.Client().Set(ctx, key+"probe", "v", time.Minute).Err()
		if err != nil && strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the cut master %s still takes writes 30 s after the cut: %v", m.Addr(), err)
		}
	}
	takeOver(t, r)
	promoted := time.Now()
	// Generous for a loaded machine; before the fix the node kept
	// sending to the cut master for as long as its slot map came from
	// there.
	const bound = 10 * time.Second
	for k := 0; ; k++ {
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		ok, err := n.Acquire(rctx, key+strconv.Itoa(k), "v", time.Minute)
		cancel()
		if ok && err == nil {
			t.Logf("followed the failover %v after the promotion", time.Since(promoted).Round(time.Millisecond))
			break
		}
		if time.Since(promoted) > bound {
			t.Fatalf("the node still fails %v after the replica's promotion: %v, %v; want it to follow the failover", bound, ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Then the node keeps sending there, whichever server it reads its
	// slot map from next (every 2 s, and after a refusal): before the
	// fix, a read from the cut master sent the slot's requests back to
	// it, refused with CLUSTERDOWN, for 0.5 to 2 s at a time.
	var fails []string
	for k := 0; time.Since(promoted) < watchAfterFailover; k++ {
		// A generous bound: what is under test is where the requests go
		// (the cut master refuses at once with CLUSTERDOWN), not how fast
		// a loaded machine answers (a 500 ms bound timed out once in a
		// fresh-clone run beside two busy loops, 2.76 s after the
		// promotion, with the node already following it).
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := n.Acquire(rctx, key+"after"+strconv.Itoa(k), "v", time.Minute)
		cancel()
		if !ok || err != nil {
			fails = append(fails, fmt.Sprintf("%v after the promotion: %v, %v", time.Since(promoted).Round(time.Millisecond), ok, err))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(fails) > 0 {
		t.Errorf("%d acquisitions failed after the node followed the failover, want none:\n%s", len(fails), strings.Join(fails, "\n"))
	}
}

// watchAfterFailover is how long RunClusterFailoverPastACutMaster checks
// that a node that followed a failover stays with the promoted replica:
// two reads of the slot map, at least.
const watchAfterFailover = 5 * time.Second

// RunClusterOldMasterBack runs, over a real Redis Cluster of three masters
// with a replica each, what a cluster node of any adapter must do when a
// master that was failed over comes back with its old slot map: master M
// stops, its replica R takes its slots over (CLUSTER FAILOVER TAKEOVER)
// and holds a lock of M's slot, and M starts again with its old
// nodes.conf while it is cut from the cluster bus. M still claims its
// slots (with its old config epoch) and, from Redis' writable delay (2 s
// after its start) until it finds itself in a minority (the node
// timeout), takes writes: two masters serve one slot. A node dialled
// with M as its only seed, whose first slot map M writes, must not be
// granted the lock there: it routes by the claim with the highest epoch,
// R's, which the other servers that M names report.
//
// The node is dialled once M takes a write directly (its window is
// open), and acquires until oldMasterTries acquisitions ended with the
// window still open, or M refuses writes again.
func RunClusterOldMasterBack(t *testing.T, dial ClusterNodeDialer) {
	Require(t)
	ctx := t.Context()
	cl, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, Partitionable: true,
		NodeTimeout: 6 * time.Second, ReplicaNoFailover: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	const key = "{back}"
	i := cl.MasterOf(slots.Of(key))
	m, r := cl.Masters()[i], cl.Replicas(i)[0]
	m.Kill()
	if err := cl.Promote(ctx, i); err != nil {
		t.Fatal(err)
	}
	// The lock's holder, on the promoted replica.
	if err := r.Client().Set(ctx, key, "holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Isolate(m); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// open reports whether M takes a write of its slot now.
	open := func() bool {
		return m.Client().Set(ctx, key+"probe", "v", time.Minute).Err() == nil
	}
	for end := time.Now().Add(30 * time.Second); !open(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the old master %s takes no write in 30 s after its restart; want it to, from 2 s after its start until the node timeout", m.Addr())
		}
	}
	seed := net.JoinHostPort("127.0.0.1", strconv.Itoa(cl.AnnouncedPort(m)))
	n, err := dial("redis://" + seed + "?cluster=true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeNode(n) })
	var grants []string
	inWindow := 0
	for k := 0; inWindow < oldMasterTries; k++ {
		value := "node" + strconv.Itoa(k)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := n.Acquire(rctx, key, value, time.Minute)
		cancel()
		if ok {
			grants = append(grants, value)
		}
		if !open() {
			break
		}
		inWindow++
		t.Logf("acquisition %d with the old master's window open: %v, %v", k, ok, err)
	}
	t.Logf("%d acquisitions ended with the old master taking writes", inWindow)
	got, err := m.Client().Get(ctx, key).Result()
	if err == nil || len(grants) > 0 {
		t.Fatalf("the old master %s (back with its old slot map, cut from the cluster) holds %s = %q (%v), and the node was granted %v, while the promoted replica %s holds it: two holders; want the node to send the slot's requests only to the master with the highest config epoch", m.Addr(), key, got, err, grants, r.Addr())
	}
}

// oldMasterTries is how many acquisitions RunClusterOldMasterBack makes
// while the old master takes writes.
const oldMasterTries = 5

// closeNode closes n when its adapter's node is an io.Closer.
func closeNode(n adapter.HandoffNode) {
	if c, ok := n.(io.Closer); ok {
		_ = c.Close()
	}
}

// takeOver promotes replica r by CLUSTER FAILOVER TAKEOVER, as an operator
// does, and waits until it says it is a master.
func takeOver(t *testing.T, r *redisproc.Process) {
	t.Helper()
	ctx := t.Context()
	if err := r.Client().Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		role, err := r.Client().Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the replica %s is not a master 30 s after CLUSTER FAILOVER TAKEOVER: %v, %v", r.Addr(), role, err)
		}
	}
}
