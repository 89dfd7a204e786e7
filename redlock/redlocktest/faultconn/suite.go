package faultconn

import (
	"context"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/slots"
	"dlm/redlock/redlocktest"
)

// Suite is the wire-fault test of one adapter, for TestWireFaults in the
// adapter's package.
type Suite struct {
	// Seed seeds the faults and the workload; 0 draws one from the clock.
	// A failing run logs it (replay it with the test's -wire.seed flag).
	Seed uint64
	// Nodes is how many redis-server nodes the workload spreads over;
	// default 2.
	Nodes int
	// Rate of faults per call (Config.Rate); default 0.03.
	Rate float64
	// Faults are the faults drawn (Config.Faults); nil: every one.
	Faults []Fault
	// Workload of the run (its Seed is Suite.Seed's).
	Workload Workload
	// NewNode returns the adapter's node for the redis-server at addr,
	// whose connections go through in (in.Dial). The suite closes it
	// (io.Closer) at the end.
	NewNode func(t *testing.T, addr string, in *Injector) adapter.Node
	// Cluster makes every node a Redis Cluster of Masters masters
	// (redlocktest.StartRedisClusters), so that the adapter's cluster
	// client is under test: NewNode then gets the first master's address,
	// the cluster's seed, and returns a cluster node over it. RunMatrix starts
	// the clusters once for all its runs (a cluster takes seconds to
	// form), each run on keys of its own.
	Cluster bool
	// Masters is the number of masters of each cluster node (Cluster);
	// default 1. With more, the workload's keys (6 by default then) lie
	// in the slots of several masters, and the node's batches go to
	// several masters at once.
	Masters int
	// Migrate moves the slots of the workload's keys from master to
	// master of each cluster node (Cluster, Masters above 1) while the
	// workload runs, one slot after the other (redisproc's MoveSlot), so
	// that the node's requests meet MOVED and ASK.
	Migrate bool
	// AllowOrphans accepts Result.Orphans (an adapter that does not order
	// its requests across a replaced connection); they are logged.
	AllowOrphans bool

	clusters []*redlocktest.RedisCluster // of Cluster, shared by RunMatrix's runs
}

// The workload and fault rate of one fault alone in RunMatrix: a quick
// run, with the fault more often than among all of them.
var eachWorkload = Workload{Rounds: 1000, Budget: 1500 * time.Millisecond}

const eachRate = 0.1

// RunMatrix runs s as subtests: "all", every fault at once with
// s.Workload; over clusters of several masters "migrate", every fault at
// s.Rate while the keys' slots move (Migrate); then one quick run
// per fault alone, where a fault that only
// acts once a connection fails or is dialled again (StallReader,
// FailDial, ResetAfterDial, DelayWrite) comes with FailWrite. Each fault alone is
// drawn at a rate of 0.1 (s.Rate is for "all"). The per-fault runs are
// what docs/guarantees.md reports.
func (s Suite) RunMatrix(t *testing.T) {
	if s.Cluster && s.clusters == nil {
		s.clusters = redlocktest.StartRedisClusters(t, s.nodes(), max(s.Masters, 1), 0)
	}
	if s.Workload.Prefix == "" {
		s.Workload.Prefix = "wire:"
	}
	t.Run("all", func(t *testing.T) {
		all := s
		all.Faults = AllFaults()
		all.Workload.Prefix = s.Workload.Prefix + "all:"
		all.Run(t)
	})
	if s.Cluster && s.Masters > 1 {
		t.Run("migrate", func(t *testing.T) {
			mig := s
			mig.Faults, mig.Migrate = AllFaults(), true
			mig.Workload = Workload{Rounds: 2000, Budget: 3 * time.Second, Timeout: s.Workload.Timeout, TTL: s.Workload.TTL, Prefix: s.Workload.Prefix + "migrate:"}
			mig.Run(t)
		})
	}
	for _, f := range AllFaults() {
		t.Run(f.String(), func(t *testing.T) {
			one := s
			one.Faults = []Fault{f}
			one.Workload.Prefix = s.Workload.Prefix + f.String() + ":"
			switch f {
			case StallReader, FailDial, ResetAfterDial, DelayWrite:
				one.Faults = append(one.Faults, FailWrite)
			}
			prefix := one.Workload.Prefix
			one.Workload, one.Rate = eachWorkload, eachRate
			one.Workload.Timeout, one.Workload.TTL, one.Workload.Prefix = s.Workload.Timeout, s.Workload.TTL, prefix
			one.Run(t)
		})
	}
}

// RunFaults runs s for the faults named in names (ParseFaults): "all"
// runs RunMatrix, any other list one Run with just those faults at s's
// rates. It is what an adapter's TestWireFaults calls with its
// -wire.faults flag.
func (s Suite) RunFaults(t *testing.T, names string) {
	t.Helper()
	if names == "" || names == "all" {
		s.RunMatrix(t)
		return
	}
	faults, err := ParseFaults(names)
	if err != nil {
		t.Fatal(err)
	}
	s.Faults = faults
	s.Run(t)
}

// nodes is s.Nodes or its default.
func (s Suite) nodes() int {
	if s.Nodes <= 0 {
		return 2
	}
	return s.Nodes
}

// Run starts the nodes, runs RunLocks over them with every fault on, and
// fails t for every violation, naming the seed.
func (s Suite) Run(t *testing.T) {
	t.Helper()
	seed := s.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("wire faults: seed %d (replay with -wire.seed=%d)", seed, seed)
		}
	})
	s.Nodes = s.nodes()
	if s.Rate <= 0 {
		s.Rate = 0.03
	}
	type server struct {
		addr  string
		truth redis.Cmdable
	}
	servers := make([]server, s.Nodes)
	switch {
	case s.Cluster:
		if s.clusters == nil {
			s.clusters = redlocktest.StartRedisClusters(t, s.Nodes, max(s.Masters, 1), 0)
		}
		for i, c := range s.clusters {
			servers[i] = server{c.Masters()[0].Addr(), c.Client()}
		}
		if s.Masters > 1 && s.Workload.Keys <= 0 {
			s.Workload.Keys = 6
		}
	default:
		for i, srv := range redlocktest.Start(t, s.Nodes).Servers {
			servers[i] = server{srv.Addr(), srv.Client()}
		}
	}
	targets := make([]Target, s.Nodes)
	for i, srv := range servers {
		in := New(Config{Seed: seed + uint64(i), Rate: s.Rate, Faults: s.Faults})
		t.Cleanup(in.Wait) // after NewNode's own clean-ups
		if s.Cluster {
			in.SetEnabled(false) // until the node learned the slots: ready
		}
		n := s.NewNode(t, srv.addr, in)
		t.Cleanup(func() {
			if c, ok := n.(io.Closer); ok {
				_ = c.Close()
			}
		})
		if s.Cluster {
			ready(t, n, s.Workload.Prefix+"ready")
			in.SetEnabled(true)
		}
		targets[i] = Target{Node: n, Injector: in, Truth: srv.truth}
	}
	w := s.Workload
	w.Seed = seed
	stop := make(chan struct{})
	var migrating sync.WaitGroup
	var moves atomic.Int64
	if s.Migrate && s.Cluster && s.Masters > 1 {
		w.defaults()
		migrating.Go(func() { migrate(t, s.clusters, w, stop, &moves) })
	}
	res := RunLocks(t.Context(), w, targets)
	close(stop)
	migrating.Wait()
	if s.Migrate {
		t.Logf("slots moved: %d", moves.Load())
	}
	for _, tg := range targets {
		tg.Injector.SetEnabled(false)
	}
	var injected int64
	for i, tg := range targets {
		injected += tg.Injector.Injected()
		t.Logf("node %d faults: %s", i, tg.Injector)
	}
	t.Logf("rounds %d, requests %d, acquired %d, errors %d, faults %d", res.Rounds, res.Requests, res.Acquired, res.Errors, injected)
	for _, v := range res.Violations {
		t.Errorf("violation: %s", v)
	}
	for _, o := range res.Orphans {
		if s.AllowOrphans {
			t.Logf("orphan: %s", o)
		} else {
			t.Errorf("orphan: %s", o)
		}
	}
	if injected == 0 {
		t.Errorf("no fault was injected in %d rounds", res.Rounds)
	}
}

// ready waits until n, a cluster node, answered an acquisition of key
// (a cluster client first learns the slots, and an adapter may build its
// client in the background), and releases it: a run whose first faults
// broke that learning would otherwise fail every request at once and test
// nothing.
func ready(t *testing.T, n adapter.Node, key string) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		ok, err := n.Acquire(ctx, key, "ready", time.Minute)
		if err == nil {
			_, _ = n.Release(ctx, key, "ready")
		}
		cancel()
		switch {
		case err == nil && ok:
			return
		case err == nil:
			t.Fatalf("faultconn: the cluster node refused %s, which nothing else locks", key)
		case time.Now().After(end):
			t.Fatalf("faultconn: the cluster node did not answer in 30 s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// migrate moves the slot of one of w's keys to the next master, cluster
// after cluster, key after key, until stop is closed, and counts the
// moves.
func migrate(t *testing.T, clusters []*redlocktest.RedisCluster, w Workload, stop chan struct{}, moves *atomic.Int64) {
	owner := map[[2]int]int{} // {cluster, slot}: master
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		ci := i % len(clusters)
		c := clusters[ci]
		slot := slots.Of(w.Prefix + strconv.Itoa((i/len(clusters))%w.Keys))
		from, ok := owner[[2]int{ci, slot}]
		if !ok {
			from = c.MasterOf(slot)
		}
		to := (from + 1) % len(c.Masters())
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		err := c.MoveSlot(ctx, slot, to)
		cancel()
		if err != nil {
			t.Errorf("faultconn: moving slot %d of cluster %d: %v", slot, ci, err)
			return
		}
		owner[[2]int{ci, slot}] = to
		moves.Add(1)
	}
}
