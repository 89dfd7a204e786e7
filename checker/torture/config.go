package torture

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config is one run of the checker: a scenario and the deployment it runs
// against. A run is data: print it, store it, replay it with the same seed.
type Config struct {
	// Scenario names the scenario (see Scenarios), or "random".
	Scenario string `json:"scenario"`
	// Seed drives every random choice of the run: which nodes form the
	// majority, which node faults, the clients' retry delays, the random
	// fault schedule. The same seed replays the same choices.
	Seed uint64 `json:"seed"`
	// Nodes is the number of lock nodes. Default 5 (R7).
	Nodes int `json:"nodes"`
	// TTL is the lock validity time of every acquisition. Default 2s.
	TTL time.Duration `json:"ttl"`
	// NodeTimeout bounds each request to a node (R8.2). Default 100ms:
	// twice the client library's default, because a run puts every node,
	// proxy and client on one machine, where a busy moment must not read as
	// a fault.
	NodeTimeout time.Duration `json:"node_timeout"`
	// Duration is how long the looping scenarios and random mode run.
	// Default 10s.
	Duration time.Duration `json:"duration"`
	// Clients is the number of contending clients of the looping scenarios
	// and random mode. Default 4 (split-votes uses twice as many).
	Clients int `json:"clients"`
	// Resources is the number of resources random mode and read-write
	// lock. Default 2.
	Resources int `json:"resources"`
	// Persistence runs the nodes with AOF and appendfsync always (R16.2).
	// Default off.
	Persistence bool `json:"persistence"`
	// DelayedRestart keeps a crashed node down for RestartDelay before it
	// restarts (R16.3). Default off.
	DelayedRestart bool `json:"delayed_restart"`
	// RestartDelay is the delay of a delayed restart; 0 means TTL + TTL/4,
	// a little longer than the largest ttl in use, as R16.3 asks.
	RestartDelay time.Duration `json:"restart_delay"`
	// Fencing makes the clients take fencing tokens (redlock.WithFencing)
	// and the register reject stale ones (R18). Default off.
	Fencing bool `json:"fencing"`
	// Byzantine is the number f of lying nodes the clients tolerate
	// (redlock.WithByzantineNodes): the quorum grows to ceil((N+f+1)/2).
	// Default 0: every node is trusted and the quorum is the majority.
	Byzantine int `json:"byzantine"`
	// Faults lists the fault kinds random mode and read-write draw from. Default
	// DefaultRandomFaults().
	Faults []string `json:"faults,omitempty"`
	// LivenessBound is the longest a resource may be wanted and held by
	// nobody while no fault is active. 0 means 2 x TTL.
	LivenessBound time.Duration `json:"liveness_bound"`
	// Adapter is the clients' node adapter: "goredis" (DefaultAdapter, ""
	// reads as it) or "rueidis". Both batch lock requests per node and have
	// the hand-off, the hand-over between the workers of one client
	// included (adapter.HandoffNode, adapter.TransferNode).
	Adapter string `json:"adapter,omitempty"`
	// ClusterNodes is how many of the Nodes are Redis Clusters in random
	// mode (the last ones), each of randomClusterMasters masters with
	// ClusterReplicas replicas per master that never promote themselves.
	// The fault schedule hits them with cluster faults (a master killed,
	// paused, cut from its cluster while clients still reach it, failed
	// over by hand after the ttl, a slot migrated) and the other nodes with
	// Faults. Default 0: no cluster node.
	ClusterNodes int `json:"cluster_nodes,omitempty"`
	// ClusterReplicas is the number of replicas per master of the cluster
	// nodes of random mode: 0 or 1 (failovers need one). Default 0.
	ClusterReplicas int `json:"cluster_replicas,omitempty"`
	// PromotableReplicas lets the replicas of cluster-master-partitioned
	// promote themselves (no cluster-replica-no-failover) and makes the
	// clients accept such nodes (redlock.WithPromotableReplicas): the
	// configuration the docs call unsafe. Default on for that scenario,
	// whose violation it reproduces; off elsewhere.
	PromotableReplicas bool `json:"promotable_replicas,omitempty"`
	// Workers is how many Lock calls each client of the looping scenarios
	// and random mode runs at once, each a contender of its own in the
	// history (named cN.wM beyond the first). Workers of one client queue
	// in its hand-off, and the lock passes between them.
	// Default 1 (0 reads as 1).
	Workers int `json:"workers,omitempty"`
}

// DefaultAdapter is the adapter of DefaultConfig, and what an empty
// Config.Adapter reads as. It is go-redis, not rueidis as in the other dlm
// subcommands: under the slow-node scenario the rueidis adapter made 0 to 2
// acquisitions in 3 s where go-redis made 6 (dlm torture --scenario
// slow-node --seed 7 --ttl 2s --node-timeout 400ms --duration 3s --clients 2
// --adapter rueidis), which is for redlock to explain before the checker
// defaults to it.
const DefaultAdapter = "goredis"

// adapter returns the configured adapter, "" read as DefaultAdapter.
func (c Config) adapter() string {
	if c.Adapter == "" {
		return DefaultAdapter
	}
	return c.Adapter
}

// Adapters lists the node adapters a run can use (Config.Adapter).
func Adapters() []string { return []string{"goredis", "rueidis"} }

// workers is Workers, with 0 read as 1.
func (c Config) workers() int { return max(c.Workers, 1) }

// DefaultConfig returns the defaults for scenario name, with the settings
// the scenario is named after: delayed-restart turns on DelayedRestart,
// fsync-always turns on Persistence; random and read-write turn on
// DelayedRestart and draw from DefaultRandomFaults.
func DefaultConfig(name string) Config {
	c := Config{
		Scenario:    name,
		Seed:        1,
		Nodes:       5,
		TTL:         2 * time.Second,
		NodeTimeout: 100 * time.Millisecond,
		Duration:    10 * time.Second,
		Clients:     4,
		Resources:   2,
		Adapter:     DefaultAdapter,
		Workers:     1,
	}
	switch name {
	case "delayed-restart":
		c.DelayedRestart = true
	case "fsync-always":
		c.Persistence = true
	case "random", "read-write":
		// Random mode's default is a configuration that promises safety
		// under its default faults: crashed nodes restart late (R16.3).
		// read-write draws its faults the same way.
		c.Faults = DefaultRandomFaults()
		c.DelayedRestart = true
	case "cluster-random":
		// Crashed masters restart late (R16.3); failovers are by hand,
		// after the ttl; fencing is on, so that tokens are checked
		// across failovers and migrations.
		c.DelayedRestart, c.Fencing = true, true
	case "cluster-master-partitioned":
		// The configuration the docs call unsafe: replicas that promote
		// themselves, accepted by the clients. A ttl of 5s outlasts the
		// replica's promotion (node timeout 1s, then an election of
		// 0.5-1s) and B's acquisition on a loaded machine.
		c.PromotableReplicas, c.TTL = true, 5*time.Second
	case "cluster-failover-fenced":
		// The failover by hand of docs/operations.md: after the ttl, on
		// nodes with AOF and appendfsync always, with fencing.
		c.DelayedRestart, c.Persistence, c.Fencing = true, true, true
	case "election":
		// The term is the fencing token; crashed nodes restart late
		// (R16.3), so that the faults keep safety.
		// Rolling restarts without persistence: terms stay increasing
		// through the restart repair of fencing.
		c.Faults = []string{FaultRestart, FaultPauseNode, FaultPartition, FaultRolling}
		c.DelayedRestart, c.Fencing = true, true
	}
	return c
}

// Validate reports the first setting that is wrong, saying what is expected.
func (c Config) Validate() error {
	_, known := lookup(c.Scenario)
	switch {
	case !known && c.Scenario != "random":
		return fmt.Errorf("torture: unknown scenario %q; want one of %s or random", c.Scenario, strings.Join(ScenarioNames(), ", "))
	case c.Nodes < 3:
		return fmt.Errorf("torture: nodes must be at least 3 (a majority must survive one fault), got %d", c.Nodes)
	case c.Nodes > 15:
		return fmt.Errorf("torture: nodes must be at most 15 (each is a redis-server process), got %d", c.Nodes)
	case c.TTL < 200*time.Millisecond:
		return fmt.Errorf("torture: ttl must be at least 200ms (the faults take tens of milliseconds to inject), got %v", c.TTL)
	case c.NodeTimeout <= 0 || c.NodeTimeout*4 > c.TTL:
		return fmt.Errorf("torture: node timeout must be positive and at most a quarter of the ttl %v, got %v", c.TTL, c.NodeTimeout)
	case c.Duration <= 0:
		return fmt.Errorf("torture: duration must be positive, got %v", c.Duration)
	case c.Clients < 2:
		return fmt.Errorf("torture: clients must be at least 2 (mutual exclusion needs contenders), got %d", c.Clients)
	case c.Clients > 64:
		return fmt.Errorf("torture: clients must be at most 64, got %d", c.Clients)
	case c.Resources < 1:
		return fmt.Errorf("torture: resources must be at least 1, got %d", c.Resources)
	case c.RestartDelay < 0:
		return fmt.Errorf("torture: restart delay must be 0 (ttl + ttl/4) or positive, got %v", c.RestartDelay)
	case c.DelayedRestart && c.RestartDelay != 0 && c.RestartDelay <= c.TTL:
		return fmt.Errorf("torture: a delayed restart must wait longer than the ttl %v (R16.3), got %v", c.TTL, c.RestartDelay)
	case c.Byzantine < 0:
		return fmt.Errorf("torture: byzantine must be 0 or more lying nodes tolerated, got %d", c.Byzantine)
	case c.Byzantine > 0 && !c.Fencing && c.Nodes < 3*c.Byzantine+1:
		return fmt.Errorf("torture: tolerating %d lying nodes needs at least 3f+1 = %d nodes, got %d", c.Byzantine, 3*c.Byzantine+1, c.Nodes)
	case c.Byzantine > 0 && c.Fencing && c.Nodes < 4*c.Byzantine+1:
		return fmt.Errorf("torture: tolerating %d lying nodes with fencing needs at least 4f+1 = %d nodes, got %d", c.Byzantine, 4*c.Byzantine+1, c.Nodes)
	case c.Scenario == "lying-node" && c.Fencing:
		return fmt.Errorf("torture: lying-node cannot be combined with fencing: its node lies about SET, and a fenced acquisition is a script, which it forwards truthfully")
	case c.LivenessBound < 0:
		return fmt.Errorf("torture: liveness bound must be 0 (2 x ttl) or positive, got %v", c.LivenessBound)
	case c.Adapter != "" && !slices.Contains(Adapters(), c.Adapter):
		return fmt.Errorf("torture: unknown adapter %q; want one of %s", c.Adapter, strings.Join(Adapters(), ", "))
	case c.ClusterNodes < 0 || c.ClusterNodes > c.Nodes:
		return fmt.Errorf("torture: cluster nodes must be 0 to the %d nodes, got %d", c.Nodes, c.ClusterNodes)
	case c.ClusterNodes > 0 && c.Scenario != "random":
		return fmt.Errorf("torture: --cluster-nodes is for random mode (the cluster scenarios make every node a cluster), got scenario %s", c.Scenario)
	case c.ClusterReplicas < 0 || c.ClusterReplicas > 1:
		return fmt.Errorf("torture: cluster replicas must be 0 or 1 per master, got %d", c.ClusterReplicas)
	case c.ClusterReplicas > 0 && c.ClusterNodes == 0:
		return fmt.Errorf("torture: cluster replicas need cluster nodes (--cluster-nodes)")
	case c.PromotableReplicas && c.Scenario != "cluster-master-partitioned":
		return fmt.Errorf("torture: promotable replicas are for the cluster-master-partitioned scenario, got %s", c.Scenario)
	case c.Workers < 0 || c.Workers > 16:
		return fmt.Errorf("torture: workers per client must be 1 to 16 (0 reads as 1), got %d", c.Workers)
	}
	for _, f := range c.Faults {
		if !slices.Contains(AllFaults(), f) {
			return fmt.Errorf("torture: unknown fault %q; want some of %s", f, strings.Join(AllFaults(), ", "))
		}
	}
	if c.Scenario == "election" && !c.Fencing {
		return fmt.Errorf("torture: the election scenario needs fencing: a leader's term is its fencing token")
	}
	if c.Scenario == "election" && slices.Contains(c.Faults, FaultPauseClient) {
		return fmt.Errorf("torture: the election scenario does not model %s: a leader's extensions run in the background, so pausing its loop pauses nothing", FaultPauseClient)
	}
	if (c.Scenario == "random" || c.Scenario == "read-write" || c.Scenario == "election") && len(c.Faults) == 0 {
		return fmt.Errorf("torture: %s needs at least one fault kind (%s)", c.Scenario, strings.Join(AllFaults(), ", "))
	}
	return nil
}

// restartDelay is how long a crashed node stays down.
func (c Config) restartDelay() time.Duration {
	switch {
	case !c.DelayedRestart:
		return 0
	case c.RestartDelay > 0:
		return c.RestartDelay
	}
	return c.TTL + c.TTL/4
}

func (c Config) livenessBound() time.Duration {
	if c.LivenessBound > 0 {
		return c.LivenessBound
	}
	return 2 * c.TTL
}

// Expectation is what a configuration promises under its scenario's faults.
type Expectation int

// The expectations of a run.
const (
	// ExpectSafe: no violation may occur.
	ExpectSafe Expectation = iota
	// ExpectViolation: the scenario's faults break safety in this
	// configuration, and the run must reproduce it.
	ExpectViolation
	// ExpectNoPromise: the faults may break safety but a run need not show
	// it (random mode with faults the configuration does not protect from).
	ExpectNoPromise
)

// String describes the expectation.
func (e Expectation) String() string {
	switch e {
	case ExpectSafe:
		return "no violation"
	case ExpectViolation:
		return "violation expected"
	case ExpectNoPromise:
		return "no promise"
	}
	return fmt.Sprintf("Expectation(%d)", int(e))
}

// MarshalText encodes the expectation as its description.
func (e Expectation) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// Expect returns what the configuration promises for its scenario. It is the
// table of docs/guarantees.md in code: a restart inside the ttl breaks
// safety unless the node persists with appendfsync always (R16.2), stays
// down past the ttl (R16.3), or the clients' Byzantine quorum (f >= 1)
// outvotes the one amnesiac node; a forward clock jump on a node of the
// quorum breaks it unless the Byzantine quorum outvotes that node; a client
// pause past the validity, or a write delayed in flight past it, breaks the
// protected resource unless it is fenced (R18); a lying node breaks it unless the clients tolerate a liar;
// partitions, slow nodes, contention and late extensions break nothing.
func (c Config) Expect() Expectation {
	restartSafe := c.restartSafe()
	switch c.Scenario {
	case "cluster-master-killed":
		// A restarted cluster master serves again only after Redis
		// Cluster's writable delay (2s): a delayed restart for ttls up
		// to it.
		if restartSafe || c.TTL <= clusterWritableDelay {
			return ExpectSafe
		}
		return ExpectViolation
	case "restart-without-persistence", "delayed-restart", "fsync-always":
		if restartSafe {
			return ExpectSafe
		}
		return ExpectViolation
	case "cluster-replica-promoted", "cluster-failover-fenced":
		// A promoted replica lacks what replication had not sent, whatever
		// the persistence: only a failover delayed past the ttl is safe
		// (and its fences are repaired: the replication id changed).
		if c.DelayedRestart || c.Byzantine > 0 {
			return ExpectSafe
		}
		return ExpectViolation
	case "cluster-random":
		// A master killed and restarted at once, empty, inside the ttl
		// is a node that forgot its locks.
		if !c.restartSafe() {
			return ExpectNoPromise
		}
		return ExpectSafe
	case "cluster-master-partitioned":
		// A replica that promotes itself lacks what its cut master
		// granted after the cut: only a quorum that outvotes the node
		// keeps the lock.
		if c.PromotableReplicas && c.Byzantine == 0 {
			return ExpectViolation
		}
		return ExpectSafe
	case "clock-jump", "lying-node":
		if c.Byzantine > 0 {
			return ExpectSafe
		}
		return ExpectViolation
	case "client-pause", "write-delay":
		if c.Fencing {
			return ExpectSafe
		}
		return ExpectViolation
	case "random", "read-write", "election":
		if c.ClusterNodes > 0 && !c.restartSafe() {
			return ExpectNoPromise // a cluster master killed restarts at once, empty
		}
		for _, f := range c.Faults {
			if k, ok := findFault(f); ok && k.Breaks(c) {
				return ExpectNoPromise
			}
		}
	}
	return ExpectSafe
}

// violationFaults names the fault kinds (checker.Fault.Kind) of which a
// history must hold one for a violation to be the one the scenario
// reproduces (Expect is ExpectViolation).
func (c Config) violationFaults() []string {
	switch c.Scenario {
	case "restart-without-persistence", "delayed-restart", "fsync-always", "cluster-master-killed":
		return []string{FaultRestart}
	case "cluster-replica-promoted", "cluster-failover-fenced":
		return []string{"promote"}
	case "cluster-master-partitioned":
		return []string{faultClusterPartition}
	case "clock-jump":
		return []string{FaultClockJump}
	case "lying-node":
		return []string{"lie"}
	case "write-delay":
		return []string{"delay-write", FaultPauseClient}
	}
	return []string{FaultPauseClient} // client-pause
}

// String prints the configuration on one line, flags style.
func (c Config) String() string {
	s := fmt.Sprintf("--scenario %s --seed %d --nodes %d --ttl %v --node-timeout %v", c.Scenario, c.Seed, c.Nodes, c.TTL, c.NodeTimeout)
	if c.Persistence {
		s += " --persistence"
	}
	if c.DelayedRestart {
		s += " --delayed-restart"
		if c.RestartDelay > 0 {
			s += fmt.Sprintf(" --restart-delay %v", c.RestartDelay)
		}
	}
	if c.Fencing {
		s += " --fencing"
	}
	if c.Byzantine > 0 {
		s += fmt.Sprintf(" --byzantine %d", c.Byzantine)
	}
	if c.adapter() != DefaultAdapter {
		s += " --adapter " + c.adapter()
	}
	if usesLoop(c.Scenario) {
		s += fmt.Sprintf(" --duration %v --clients %d", c.Duration, c.Clients)
		if c.workers() > 1 {
			s += fmt.Sprintf(" --workers %d", c.workers())
		}
	}
	if c.Scenario == "random" || c.Scenario == "read-write" {
		s += fmt.Sprintf(" --resources %d --faults %s", c.Resources, strings.Join(c.Faults, ","))
	}
	if c.ClusterNodes > 0 {
		s += fmt.Sprintf(" --cluster-nodes %d --cluster-replicas %d", c.ClusterNodes, c.ClusterReplicas)
	}
	if c.Scenario == "cluster-master-partitioned" && !c.PromotableReplicas {
		s += " --promotable-replicas=false"
	}
	return s
}
