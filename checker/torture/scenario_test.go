package torture

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"dlm/checker"
	"dlm/redlock/redisproc"
)

// TestMain checks for leaked goroutines. toxiproxy v2.5.0 tears a link down
// asynchronously and can leave its goroutines blocked on a stage that a
// stopped proxy no longer feeds; those, inside the library, are ignored. So
// are the bounded goroutines that go-redis' and rueidis' cluster clients
// leave behind their Close after a master was lost (a dial probe, a
// delayed refresh, connections closed five seconds later).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).write"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).read"),
	)
}

// short returns the short form of a scenario's configuration for the test
// suite: 3s loops, and a 2s ttl with a 400ms node timeout, so that a
// starved machine (the suite shares 2 cores with every other package's
// tests) does not turn slow replies into faults nobody injected.
func short(name string) Config {
	c := DefaultConfig(name)
	c.Seed = 7
	c.TTL = 2 * time.Second
	c.Duration = 3 * time.Second
	c.Clients = 2 // split-votes: 4 contenders
	c.NodeTimeout = 400 * time.Millisecond
	// Shorter than the 3s loops, so that liveness can fail; generous against
	// the tens to hundreds of milliseconds measured (docs/guarantees.md).
	c.LivenessBound = 1500 * time.Millisecond
	return c
}

// requireEnv skips a test the machine cannot run, loudly, unless CI or
// DLM_REQUIRE_REDIS asks for every test to run.
func requireEnv(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrEnvironment) && os.Getenv("CI") == "" && os.Getenv("DLM_REQUIRE_REDIS") == "" {
		t.Skipf("SKIPPED, cannot run here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestScenarios runs every named scenario in its short form against real
// redis-server processes and checks it reaches its expected verdict.
func TestScenarios(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(*Config)
		expect Expectation
	}{
		{"restart-without-persistence", nil, ExpectViolation},              // R16.1
		{"delayed-restart", nil, ExpectSafe},                               // R16.3
		{"fsync-always", nil, ExpectSafe},                                  // R16.2
		{"clock-jump", nil, ExpectViolation},                               // R9
		{"client-pause", nil, ExpectViolation},                             // R18
		{"client-pause", func(c *Config) { c.Fencing = true }, ExpectSafe}, // R18
		{"write-delay", nil, ExpectViolation},                              // R18
		{"write-delay", func(c *Config) { c.Fencing = true }, ExpectSafe},  // R18
		{"partition-3-2", nil, ExpectSafe},
		// A slow node that a grant needs is waited for up to ttl/2 -
		// drift once a ttl per client (redlock/timeout.go), and in a split
		// vote both contenders wait: the bound gains that wait (1.5 s was
		// set before it, and runs under load left the resource free 1.8-2.0 s).
		{"slow-node", func(c *Config) { c.LivenessBound += c.TTL / 2 }, ExpectSafe},
		{"split-votes", nil, ExpectSafe},
		{"extend-after-expiry", nil, ExpectSafe}, // R17
		{"lying-node", nil, ExpectViolation},
		{"lying-node", func(c *Config) { c.Byzantine = 1 }, ExpectSafe},
		{"restart-without-persistence", func(c *Config) { c.Byzantine = 1 }, ExpectSafe}, // one amnesiac node outvoted
		// Nodes that are Redis Clusters: a master that forgets, a replica
		// promoted without A's key, and both kept safe by waiting the ttl.
		// A ttl well above the restarted master's writable delay (2s) and
		// the cluster's noticing it is back, which a loaded machine
		// stretches.
		{"cluster-master-killed", func(c *Config) { c.TTL = 10 * time.Second }, ExpectViolation},
		{"cluster-master-killed", nil, ExpectSafe}, // a 2s ttl is within the writable delay
		{"cluster-master-killed", func(c *Config) { c.TTL, c.DelayedRestart = 5*time.Second, true }, ExpectSafe},
		{"cluster-replica-promoted", func(c *Config) { c.TTL = 5 * time.Second }, ExpectViolation}, // room for B on a loaded machine
		{"cluster-replica-promoted", func(c *Config) { c.DelayedRestart = true }, ExpectSafe},
		// The failover by hand of docs/operations.md, with fencing: the
		// promoted replica lacks A's fence raise, and B's token must still
		// exceed A's (before the floor carried the replication id: "fencing
		// token did not increase: B (lock B#26) got token ...449921 at
		// 4159.0ms, after A (lock A#2) had got token ...449921"). Over
		// rueidis, which follows the failover.
		{"cluster-failover-fenced", func(c *Config) { c.Adapter = "rueidis" }, ExpectSafe},
		// Random faults on cluster nodes: masters killed, paused and
		// failed over by hand, slots migrated, under contention.
		{"cluster-random", func(c *Config) { c.Adapter = "rueidis" }, ExpectSafe},
		// A master cut from its cluster, bus and replication, while the
		// clients reach it: with replicas that promote themselves (the
		// scenario's default, which the clients must opt in to), two
		// holders; with replicas that never do, none. Three nodes of
		// three masters and three replicas each.
		{"cluster-master-partitioned", func(c *Config) { c.Nodes, c.TTL = 3, 5*time.Second }, ExpectViolation},
		{"cluster-master-partitioned", func(c *Config) {
			c.Nodes, c.TTL, c.PromotableReplicas, c.Adapter = 3, 5*time.Second, false, "rueidis"
		}, ExpectSafe},
		{"random", nil, ExpectSafe},
		// One node of random mode a Redis Cluster of three masters
		// (cluster faults: kill, pause, migration, a master cut from its
		// cluster).
		{"random", func(c *Config) { c.ClusterNodes = 1 }, ExpectSafe},
		{"election", nil, ExpectSafe}, // crashes, pauses, partitions under several candidates
		// A rolling restart without persistence: terms keep increasing
		// (the restart repair of fencing; seed 7 on 3 nodes, ttl 500ms,
		// 25s gave a term 1 again before it).
		{"election", func(c *Config) {
			c.Nodes, c.TTL, c.NodeTimeout, c.Duration, c.Faults = 3, 500*time.Millisecond, 100*time.Millisecond, 4*time.Second, []string{FaultRolling}
		}, ExpectSafe},
		// Workers of one client pass the lock among themselves (rueidis,
		// adapter.TransferNode) while the faults hit.
		{"random", func(c *Config) { c.Adapter, c.Workers = "rueidis", 3 }, ExpectSafe},
		{"split-votes", func(c *Config) { c.Adapter, c.Workers = "rueidis", 3 }, ExpectSafe},
		// The other adapter.
		{"split-votes", func(c *Config) { c.Adapter = "rueidis" }, ExpectSafe},
		// Readers and writers (RLock, WLock) under the random faults.
		{"read-write", nil, ExpectSafe},
		{"read-write", func(c *Config) { c.Adapter = "rueidis" }, ExpectSafe},
		// Writers fenced (tokens shared with plain locks) under client
		// pauses: the register refuses a paused writer's stale write.
		{"read-write", func(c *Config) { c.Fencing, c.Faults = true, append(DefaultRandomFaults(), FaultPauseClient) }, ExpectSafe},
	}
	// At most 4 runs at once: each is a handful of processes and an
	// in-process proxy per link, and a starved 2-core machine turns node
	// timeouts into faults nobody injected.
	slots := make(chan struct{}, 4)
	for _, tt := range tests {
		name := tt.name
		if tt.mod != nil {
			c := DefaultConfig(tt.name)
			tt.mod(&c)
			def := strings.Split(DefaultConfig(tt.name).String(), " --")
			for _, f := range strings.Split(c.String(), " --") {
				if !slices.Contains(def, f) {
					name += "/" + f // the flags that differ from the defaults
				}
			}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			cfg := short(tt.name)
			if tt.mod != nil {
				tt.mod(&cfg)
			}
			if got := cfg.Expect(); got != tt.expect {
				t.Fatalf("Expect() = %v, want %v", got, tt.expect)
			}
			rep, err := Run(t.Context(), cfg)
			if errors.Is(err, redisproc.ErrClusterState) {
				// Redis Cluster's own gossip did not converge in time
				// after the fault (seen once in about 20 runs of
				// cluster-replica-promoted, quiet machine): the run
				// says nothing of the clients; try the next seed once.
				t.Logf("%s: %v; trying the next seed", cfg, err)
				cfg.Seed++
				rep, err = Run(t.Context(), cfg)
			}
			requireEnv(t, err)
			// A cluster scenario reproduces its violation only when B's
			// acquisition wins a race against the clients' view of the
			// cluster after the loss (slot maps refreshed, a restarted
			// master writable again), which a loaded machine can lose
			// until A's validity has passed: a run that found none is
			// tried again with the next seeds, twice at most. A run that
			// shows a violation where none is expected is never retried.
			for try := 1; try < 3 && !rep.Matches && tt.expect == ExpectViolation && strings.HasPrefix(tt.name, "cluster-") && rep.Violations == 0; try++ {
				t.Logf("%s: %s; trying the next seed", cfg, rep.Outcome)
				cfg.Seed++
				rep, err = Run(t.Context(), cfg)
				requireEnv(t, err)
			}
			// A safe scenario whose only violation is of liveness (a
			// resource left free longer than its bound) ran on a starved
			// machine as often as on a faulty lock (slow-node: 1.85 s
			// free under two busy loops): tried once more with the next
			// seed. A safety violation is never retried.
			// So is a safe scenario's inconclusive run (cluster-random
			// once in 6 under load 44), which shows nothing either way,
			// with twice the time: on a starved machine its 3 s can pass
			// with no acquisition at all.
			if !rep.Matches && tt.expect == ExpectSafe && (onlyLiveness(rep) || rep.Inconclusive) {
				t.Logf("%s: %s; only liveness violated or inconclusive, trying the next seed", cfg, rep.Outcome)
				if rep.Inconclusive {
					cfg.Duration *= 2
				}
				cfg.Seed++
				rep, err = Run(t.Context(), cfg)
				requireEnv(t, err)
			}
			if !rep.Matches {
				t.Fatalf("%s: %s; checks %v; faults %+v", cfg, rep.Outcome, rep.Checks, rep.Faults)
			}
			if rep.Expected == ExpectViolation && rep.Counterexample == nil {
				t.Errorf("violation without a counterexample")
			}
			if cfg.Workers > 1 {
				workers := 0
				for _, op := range rep.History.Ops {
					if op.Kind == checker.Acquire && op.OK && strings.Contains(op.Client, ".w") {
						workers++
					}
				}
				if workers == 0 {
					t.Errorf("%d workers per client, but no extra worker acquired", cfg.Workers)
				}
			}
			if cfg.Scenario == "read-write" {
				if reads, writes, shared := rwGrants(rep.History); reads == 0 || writes == 0 || shared == 0 {
					t.Errorf("read-write granted %d reads and %d writes, %d pairs of reads overlapping: the run did not exercise read-write locks", reads, writes, shared)
				}
			}
			if cfg.Fencing {
				for _, op := range rep.History.Ops {
					if op.Kind == checker.Acquire && op.OK && op.Token == 0 && op.Mode != checker.ModeRead { // readers get none
						t.Errorf("fencing on, but grant %s carries no token", op.Lock)
					}
				}
			}
			ce := "none"
			if rep.Counterexample != nil {
				ce = *rep.Counterexample
			}
			t.Logf("%s: %s; %d acquisitions, max unavailable %.0fms; counterexample: %s", name, rep.Outcome, rep.Acquisitions, rep.MaxUnavailableMS, ce)
		})
	}
}

// rwGrants counts the read and write grants of h and the pairs of read
// holds of one resource that overlapped (which only read locks allow).
func rwGrants(h *checker.History) (reads, writes, shared int) {
	for _, hs := range h.Holds() {
		for i, a := range hs {
			if a.Possible {
				continue
			}
			if a.Shared {
				reads++
			} else {
				writes++
			}
			for _, b := range hs[i+1:] {
				if a.Shared && b.Shared && !b.Possible && b.From < a.To {
					shared++
				}
			}
		}
	}
	return reads, writes, shared
}

// onlyLiveness reports whether the liveness check is the only one of rep
// that found a violation.
func onlyLiveness(rep *Report) bool {
	live := false
	for _, c := range rep.Checks {
		if c.Verdict == checker.Violated {
			if c.Check != "liveness" {
				return false
			}
			live = true
		}
	}
	return live
}
