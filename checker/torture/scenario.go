package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dlm/checker"
	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/rueidis"
)

// Scenario is a named fault pattern that reproduces one published argument
// about Redlock. What it promises depends on the configuration
// (Config.Expect).
type Scenario struct {
	// Name is what --scenario takes.
	Name string
	// Rule cites the spec rules it exercises.
	Rule string
	// Summary says what happens, in one sentence.
	Summary string

	groups   int               // client groups, each with its own proxies
	faketime func(Config) bool // nodes run under libfaketime
	loop     bool              // runs for Config.Duration
	liar     bool              // one node lies (answers OK to SET)
	clusters bool              // every node a Redis Cluster (scenario_cluster.go)
	replicas int               // replicas per master of a cluster node
	masters  int               // masters of a cluster node; 0 reads as clusterMasters
	// partitionable puts Gates on the cluster nodes' bus and data ports,
	// so that a master can be cut from its cluster.
	partitionable bool
	run           func(context.Context, *env) error
}

// scenarioList returns the named scenarios in the order they are documented.
func scenarioList() []Scenario {
	never := func(Config) bool { return false }
	return []Scenario{
		{Name: "restart-without-persistence", Rule: "R16.1", groups: 2, faketime: never, run: runRestart,
			Summary: "client A locks exactly a majority; one node of it is killed and restarts at once, empty; client B then locks the same resource while A's validity runs"},
		{Name: "delayed-restart", Rule: "R16.3", groups: 2, faketime: never, run: runRestart,
			Summary: "as restart-without-persistence, but the crashed node stays down for longer than the ttl before it restarts"},
		{Name: "fsync-always", Rule: "R16.2", groups: 2, faketime: never, run: runRestart,
			Summary: "as restart-without-persistence, but the nodes keep an AOF with appendfsync always, so the restarted node remembers A's key"},
		{Name: "clock-jump", Rule: "R9", groups: 2, faketime: func(Config) bool { return true }, run: runClockJump,
			Summary: "client A locks exactly a majority; the clock of one node of it (libfaketime) jumps forward past the ttl, so A's key expires there; client B then locks the resource"},
		{Name: "client-pause", Rule: "R18", groups: 2, faketime: never, run: runClientPause,
			Summary: "client A acquires and pauses past its validity; B acquires and writes; A wakes up and writes with its old grant"},
		{Name: "write-delay", Rule: "R18", groups: 2, faketime: never, run: runWriteDelay,
			Summary: "client A acquires and writes at once, but its write is delayed in flight until B, which acquires after A's validity, has written; B then reads under its lock"},
		{Name: "partition-3-2", Rule: "R1.3, R14", groups: 2, faketime: never, loop: true, run: runPartition,
			Summary: "the clients are split from the nodes 3|2 (a majority side and a minority side) for half the run, then healed, while all of them contend"},
		{Name: "slow-node", Rule: "R8.2, R15", groups: 1, faketime: never, loop: true, run: runSlowNode,
			Summary: "one node answers later than the node timeout and one a little late, while the clients contend"},
		{Name: "split-votes", Rule: "R10", groups: 1, faketime: never, loop: true, run: runSplitVotes,
			Summary: "twice --clients contenders start at the same instant and keep contending for one resource: random back-off must keep acquisitions succeeding"},
		{Name: "extend-after-expiry", Rule: "R17", groups: 2, faketime: never, run: runExtendAfterExpiry,
			Summary: "client A lets its lock expire, then extends it, through the client and through each node's extend script directly: nothing may resurrect it"},
		{Name: "lying-node", Rule: "B3 (WithByzantineNodes)", groups: 2, faketime: never, liar: true, run: runLyingNode,
			Summary: "one node answers OK to every SET without performing it; client A locks exactly a quorum that includes the liar; client B then locks the resource"},
		{Name: "process-holders", Rule: "R1.1, R17", groups: 1, faketime: never, loop: true, run: runProcessHolders,
			Summary: "the clients are dlm lock processes whose commands log their critical sections; the dlm process of a client in its section is SIGKILLed at seeded times: its command must die with it, before the lock can expire"},
		{Name: "read-write", Rule: "R1.1 (RLock, WLock)", groups: 2, faketime: func(c Config) bool { return containsFault(c.Faults, FaultClockJump) }, loop: true, run: runReadWrite,
			Summary: "clients take read locks (two in three) and write locks on several resources, readers reading the register and writers writing it, while faults drawn from a seeded schedule (--faults) hit nodes, links and clients: reads may overlap, nothing else"},
		{Name: "election", Rule: "R1.1, R18 (package election)", groups: 2, faketime: func(c Config) bool { return containsFault(c.Faults, FaultClockJump) }, loop: true, run: runElection,
			Summary: "--clients candidates campaign for one election, lead a while and resign, while faults from the fault table (crashes, pauses, partitions by default) hit nodes and links: never two leaders at once, terms increase, failovers are measured"},
		{Name: "cluster-master-killed", Rule: "R16.1 (cluster nodes)", groups: 2, faketime: never, clusters: true, run: runClusterLoss,
			Summary: "the nodes are Redis Clusters; client A locks exactly a majority; on one node of it the master of the resource's slot is killed and restarts at once, empty; client B then locks the resource while A's validity runs"},
		{Name: "cluster-replica-promoted", Rule: "R16 (cluster nodes, failover)", groups: 2, faketime: never, clusters: true, replicas: 1, run: runClusterLoss,
			Summary: "the nodes are Redis Clusters with a replica per master; client A locks exactly a majority; on one node of it the master of the resource's slot dies and its replica, which had not yet replicated A's SET, takes its slots over; client B then locks the resource"},
		{Name: "cluster-failover-fenced", Rule: "R18 (cluster nodes, failover by hand)", groups: 2, faketime: never, clusters: true, replicas: 1, run: runClusterFailoverFenced,
			Summary: "the nodes are Redis Clusters with a replica per master and fencing; client A locks exactly a majority; the master of the resource's slot dies on each node of it, and on one its replica, lacking A's SET and fence raise, is promoted by hand after the ttl; client B then locks the resource there and on the other nodes: its token must exceed A's"},
		{Name: "cluster-random", Rule: "R1 (cluster nodes)", groups: 2, faketime: never, clusters: true, replicas: 1, partitionable: true, loop: true, run: runClusterRandom,
			Summary: "random mode over nodes that are Redis Clusters with a replica per master: clients contend on several resources while a seeded schedule kills, pauses, cuts from their cluster (clients still reach them) and fails over masters (by hand, after the ttl) and migrates the resources' slots between masters"},
		{Name: "cluster-master-partitioned", Rule: "R16 (cluster nodes, replicas that promote themselves)", groups: 2, faketime: never, clusters: true, replicas: 1, masters: 3, partitionable: true, run: runClusterPartition,
			Summary: "the nodes are Redis Clusters of three masters with a replica each that may promote itself (--promotable-replicas, the default here); the master of the resources' slot on one node is cut from its cluster, bus and replication, while clients still reach it; client A locks resources there during the cut; its replica is promoted without them; client B then locks them"},
		{Name: "random", Rule: "R1", groups: 2, faketime: func(c Config) bool { return containsFault(c.Faults, FaultClockJump) }, loop: true, run: runRandom,
			Summary: "clients contend on several resources while faults drawn from a seeded schedule hit nodes, links and clients"},
	}
}

func containsFault(fs []string, f string) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// Scenarios returns the named scenarios, random mode last.
func Scenarios() []Scenario { return scenarioList() }

// ScenarioNames returns the names of the named scenarios (without random).
func ScenarioNames() []string {
	var out []string
	for _, s := range scenarioList() {
		if s.Name != "random" {
			out = append(out, s.Name)
		}
	}
	return out
}

func lookup(name string) (Scenario, bool) {
	for _, s := range scenarioList() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

func usesLoop(name string) bool {
	s, ok := lookup(name)
	return ok && s.loop
}

// env is a run in progress: the cluster, the recorder, the register and the
// clients.
type env struct {
	cfg    Config
	rng    *rand.Rand
	cl     *cluster
	rec    *recorder
	reg    *register
	actors []*actor
	log    func(format string, args ...any)
	dlm    string // the dlm executable, for process-holders

	// Cluster nodes under random faults (scenario_cluster_random.go),
	// used by the fault schedule's goroutine only.
	resources      []string
	shards         [][]shard
	brokenClusters map[int]bool
}

// newActor dials a client of group g with the run's settings; Run closes
// it.
func (e *env) newActor(name string, g int) (*actor, error) {
	a, err := e.dialActor(name, g, e.rng.Uint64())
	if err != nil {
		return nil, err
	}
	e.actors = append(e.actors, a)
	return a, nil
}

// dialActor dials a client of group g with the run's settings and the
// retry seed; the caller closes it. It uses nothing of e that changes, so
// that the clients' goroutines may call it.
func (e *env) dialActor(name string, g int, seed uint64) (*actor, error) {
	opts := []redlock.Option{
		redlock.WithTTL(e.cfg.TTL),
		redlock.WithNodeTimeout(e.cfg.NodeTimeout),
		redlock.WithRetrySeed(seed),
	}
	if e.cfg.Fencing {
		opts = append(opts, redlock.WithFencing())
	}
	if e.cfg.Byzantine > 0 {
		opts = append(opts, redlock.WithByzantineNodes(e.cfg.Byzantine))
	}
	if e.cfg.PromotableReplicas {
		opts = append(opts, redlock.WithPromotableReplicas())
	}
	dial := rueidis.Dial
	if e.cfg.adapter() == "goredis" {
		dial = goredis.Dial
	}
	c, err := dial(e.cl.urls(g), opts...)
	if err != nil {
		return nil, fmt.Errorf("torture: client %s: %w", name, err)
	}
	return &actor{name: name, client: c, rec: e.rec, reg: e.reg}, nil
}

// sleep waits d or until ctx ends: the length of an injected fault or of a
// client's work, never a wait for a condition.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func names(nodes []int) string {
	s := make([]string, len(nodes))
	for i, n := range nodes {
		s[i] = nodeName(n)
	}
	return strings.Join(s, ",")
}

// split draws a quorum M of q nodes and the rest O from the seed; a node in
// must is always in M.
func (e *env) split(q int, must int) (m, o []int) {
	perm := e.rng.Perm(e.cfg.Nodes)
	for i, n := range perm {
		if n == must {
			perm[0], perm[i] = perm[i], perm[0]
		}
	}
	m, o = perm[:q], perm[q:]
	sort.Ints(m)
	sort.Ints(o)
	return m, o
}

// acquireOn makes A (group 0) acquire resource on exactly the nodes m, by
// cutting group 0 from the others while it acquires (a frozen node would
// still apply the SET when it thaws).
func (e *env) acquireOn(ctx context.Context, a *actor, resource string, m, o []int) (*grant, error) {
	end := e.rec.fault("partition", a.name+"|"+names(o), "so that "+a.name+" acquires on exactly "+names(m))
	defer end()
	for _, i := range o {
		if err := e.cl.cut(0, i); err != nil {
			return nil, err
		}
	}
	actx, cancel := context.WithTimeout(ctx, 3*e.cfg.TTL)
	defer cancel()
	g, err := a.acquireEach(actx, resource, e.cfg.TTL, 20*time.Millisecond)
	// The requests to o that the cut held back must never arrive: A holds
	// exactly m. The cut stays while they run out their node timeout (an
	// asynchronous client returns at the quorum, before they end), then the
	// proxies drop what they hold.
	sleep(ctx, 2*e.cfg.NodeTimeout)
	for _, i := range o {
		if herr := e.cl.healDropping(ctx, 0, i); herr != nil && err == nil {
			err = herr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("torture: %s could not acquire on %s: %w", a.name, names(m), err)
	}
	return g, nil
}

// twoClients dials A in group 0 and B in group 1.
func (e *env) twoClients() (a, b *actor, err error) {
	if a, err = e.newActor("A", 0); err != nil {
		return nil, nil, err
	}
	if b, err = e.newActor("B", 1); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

// twoClientsAHoldingOn starts clients A and B, and A acquires the
// register's resource on exactly a quorum m of the nodes, drawn from the
// seed with node must among them (-1: any), and writes.
func (e *env) twoClientsAHoldingOn(ctx context.Context, must int) (a, b *actor, g *grant, m []int, err error) {
	if a, b, err = e.twoClients(); err != nil {
		return nil, nil, nil, nil, err
	}
	m, o := e.split(a.client.Quorum(), must)
	if g, err = e.acquireOn(ctx, a, "r", m, o); err != nil {
		return nil, nil, nil, nil, err
	}
	a.write(g)
	return a, b, g, m, nil
}

// bWritesAfterA is the end of a scenario where B acquired r (gb) while A
// may still believe it holds g: B writes, A writes if its validity still
// runs, B reads the register back and releases.
func bWritesAfterA(ctx context.Context, a, b *actor, g, gb *grant) {
	b.write(gb)
	a.writeIfValid(g)
	b.read("r")
	_ = b.release(ctx, gb)
}

// twoClientsAHolding starts clients A and B, and A acquires the register's
// resource.
func (e *env) twoClientsAHolding(ctx context.Context) (a, b *actor, g *grant, err error) {
	if a, b, err = e.twoClients(); err != nil {
		return nil, nil, nil, err
	}
	if g, err = e.acquireR(ctx, a); err != nil {
		return nil, nil, nil, fmt.Errorf("torture: A could not acquire: %w", err)
	}
	return a, b, g, nil
}

// runRestart is restart-without-persistence, delayed-restart and
// fsync-always (R16): the same fault, three configurations.
func runRestart(ctx context.Context, e *env) error {
	a, b, g, m, err := e.twoClientsAHoldingOn(ctx, -1)
	if err != nil {
		return err
	}
	victim := m[e.rng.IntN(len(m))]
	delay := e.cfg.restartDelay()
	e.log("A holds the lock on %s; killing %s (restart after %v, persistence %v)", names(m), nodeName(victim), delay, e.cfg.Persistence)
	end := e.rec.fault("restart", nodeName(victim), fmt.Sprintf("SIGKILL, restart after %v, persistence %v", delay, e.cfg.Persistence))
	return e.afterLoss(ctx, a, b, g, victim, delay, func() error {
		err := e.cl.procs[victim].Restart(ctx, delay)
		end()
		return err
	})
}

// afterLoss runs recover (the restart of node victim, which waits delay
// first) on its own goroutine, and B's acquisition of r while A holds g:
// after the recovery when delay is 0, during its wait otherwise. When B
// acquires, it writes, A writes if its validity still runs, and B reads
// the register back.
func (e *env) afterLoss(ctx context.Context, a, b *actor, g *grant, victim int, delay time.Duration, recover func() error) error {
	recovered := make(chan error, 1)
	go func() { recovered <- recover() }()
	if delay == 0 {
		if err := <-recovered; err != nil {
			return fmt.Errorf("torture: restart %s: %w", nodeName(victim), err)
		}
	}
	bctx, cancel := context.WithTimeout(ctx, 3*e.cfg.TTL+delay)
	gb, err := b.acquireEach(bctx, "r", e.cfg.TTL, 20*time.Millisecond)
	cancel()
	if err == nil {
		bWritesAfterA(ctx, a, b, g, gb)
	}
	if delay > 0 {
		if err := <-recovered; err != nil {
			return fmt.Errorf("torture: restart %s: %w", nodeName(victim), err)
		}
	}
	return nil
}

// runLyingNode: a node that acknowledges SETs it never performs.
func runLyingNode(ctx context.Context, e *env) error {
	liarAt := e.cl.liarAt
	end := e.rec.fault("lie", nodeName(liarAt), "answers +OK to every SET without performing it")
	defer end()
	a, b, g, m, err := e.twoClientsAHoldingOn(ctx, liarAt)
	if err != nil {
		return err
	}
	e.log("A holds the lock on %s (quorum %d), %s among them lied", names(m), a.client.Quorum(), nodeName(liarAt))
	gb, err := e.acquireR(ctx, b)
	if err == nil {
		bWritesAfterA(ctx, a, b, g, gb)
	}
	return nil
}

// runClockJump: a node of A's majority jumps forward past the ttl (R9).
func runClockJump(ctx context.Context, e *env) error {
	a, b, g, m, err := e.twoClientsAHoldingOn(ctx, -1)
	if err != nil {
		return err
	}
	victim := m[e.rng.IntN(len(m))]
	jump := 2 * e.cfg.TTL
	e.log("A holds the lock on %s; %s's clock jumps forward %v", names(m), nodeName(victim), jump)
	end := e.rec.fault("clock-jump", nodeName(victim), fmt.Sprintf("libfaketime: clock jumps forward %v (rounded up to whole seconds)", jump))
	err = e.cl.jump(victim, jump)
	end()
	if err != nil {
		return err
	}
	gb, err := e.acquireR(ctx, b)
	if err == nil {
		bWritesAfterA(ctx, a, b, g, gb)
	}
	return nil
}

// acquireR acquires resource "r" for c, retrying for up to three ttls
// (each attempt one grant of its own, 20ms apart).
func (e *env) acquireR(ctx context.Context, c *actor) (*grant, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*e.cfg.TTL)
	defer cancel()
	return c.acquireEach(ctx, "r", e.cfg.TTL, 20*time.Millisecond)
}

// runClientPause: the holder pauses past its validity, then writes (R18).
func runClientPause(ctx context.Context, e *env) error {
	a, b, g, err := e.twoClientsAHolding(ctx)
	if err != nil {
		return err
	}
	end := e.rec.fault("pause-client", "A", "A stops between its acquisition and its write, until B has acquired and written")
	gb, err := e.acquireR(ctx, b)
	if err != nil {
		end()
		return fmt.Errorf("torture: B could not acquire after A's validity: %w", err)
	}
	b.write(gb)
	end()
	e.log("A wakes up %v after its validity ended and writes with grant %s (token %d); B holds %s (token %d)",
		time.Until(g.lock.Until()).Abs().Round(time.Millisecond), g.id, g.token, gb.id, gb.token)
	a.write(g)
	b.read("r")
	_ = b.release(ctx, gb)
	return nil
}

// runWriteDelay: the holder's write is delayed in flight past its validity
// and lands after the next holder's write (R18). The register is in
// process: the checker holds the request back, as a slow network would.
func runWriteDelay(ctx context.Context, e *env) error {
	a, b, g, err := e.twoClientsAHolding(ctx)
	if err != nil {
		return err
	}
	deliver := make(chan struct{})
	written := make(chan struct{})
	end := e.rec.fault("delay-write", "A", "A's write to the register is held in flight until B has acquired and written")
	go func() {
		defer close(written)
		a.writeDelayed(ctx, g, deliver)
	}()
	gb, err := e.acquireR(ctx, b)
	if err == nil {
		b.write(gb)
	}
	end()
	close(deliver)
	<-written
	if err != nil {
		return fmt.Errorf("torture: B could not acquire after A's validity: %w", err)
	}
	b.readUnder(gb)
	_ = b.release(ctx, gb)
	return nil
}

// runExtendAfterExpiry: an expired lock is never resurrected (R17).
func runExtendAfterExpiry(ctx context.Context, e *env) error {
	a, b, g, err := e.twoClientsAHolding(ctx)
	if err != nil {
		return err
	}
	end := e.rec.fault("pause-client", "A", "A stops until its keys expired on every node")
	deadline := time.Now().Add(3 * e.cfg.TTL)
	for {
		n := 0
		for _, p := range e.cl.procs {
			ks, err := p.Keys(ctx, redlock.DefaultKeyPrefix)
			if err != nil {
				end()
				return err
			}
			n += len(ks)
		}
		if n == 0 && time.Now().After(g.lock.Until()) {
			break
		}
		if time.Now().After(deadline) {
			end()
			return fmt.Errorf("torture: A's keys still on the nodes %v after its ttl", 3*e.cfg.TTL)
		}
		sleep(ctx, 10*time.Millisecond) // polling interval, bounded by the deadline
	}
	end()
	_ = a.extend(ctx, g)
	// The nodes' extend script itself, called directly with A's value: it
	// must not re-create the key (R17).
	i := e.rec.invoke(checker.Op{Client: "A(raw)", Resource: "r", Kind: checker.Extend, Lock: g.id})
	extended := false
	var errs []error
	for _, p := range e.cl.procs {
		n := goredis.NewNode(p.Client(), p.Addr())
		ok, err := n.Extend(ctx, redlock.DefaultKeyPrefix+"r", g.lock.Value(), e.cfg.TTL)
		extended = extended || ok
		errs = append(errs, err)
	}
	e.rec.complete(i, func(o *checker.Op) {
		o.OK = extended
		if err := errors.Join(errs...); err != nil {
			o.Err = err.Error()
		}
		if extended {
			o.Until = o.Start + int64(e.cfg.TTL)
		}
	})
	bctx, cancel := context.WithTimeout(ctx, 2*e.cfg.TTL)
	gb, err := b.acquireEach(bctx, "r", e.cfg.TTL, 20*time.Millisecond)
	cancel()
	if err == nil {
		b.write(gb)
		_ = b.release(ctx, gb)
	}
	return nil
}

// pauseFlag asks a looping client to pause past its validity while it holds
// its next lock.
type pauseFlag struct{ on atomic.Bool }

// contend runs a client's loop until ctx ends: acquire (waiting at most a
// ttl), write, work a little, write again, release.
func (e *env) contend(ctx context.Context, a *actor, resources []string, rng *rand.Rand, pause *pauseFlag) {
	ttl := e.cfg.TTL
	for ctx.Err() == nil {
		r := resources[rng.IntN(len(resources))]
		actx, cancel := context.WithTimeout(ctx, ttl)
		g, err := a.acquire(actx, r, ttl, 0)
		cancel()
		if err != nil {
			continue
		}
		a.write(g)
		if pause != nil && pause.on.CompareAndSwap(true, false) {
			end := e.rec.fault("pause-client", a.name, "holder pauses 1.5 x ttl between two writes")
			sleep(ctx, ttl+ttl/2)
			end()
		} else {
			sleep(ctx, time.Duration(rng.Int64N(int64(ttl/10)+1)))
		}
		a.write(g)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
		_ = a.release(rctx, g)
		cancel()
	}
}

// contenders dials n clients, alternating between the groups, and runs
// their loops until ctx ends, all starting at the same instant: Workers
// loops per client, each a contender of its own that shares the client.
func (e *env) contenders(ctx context.Context, n, groups int, resources []string, pauses []*pauseFlag) error {
	var as []*actor
	var rngs []*rand.Rand
	for i := range n {
		a, err := e.newActor(fmt.Sprintf("c%d", i), i%groups)
		if err != nil {
			return err
		}
		as = append(as, a)
		rngs = append(rngs, rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64())))
		for w := 1; w < e.cfg.workers(); w++ {
			as = append(as, &actor{name: fmt.Sprintf("c%d.w%d", i, w), client: a.client, rec: e.rec, reg: e.reg})
			rngs = append(rngs, rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64())))
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, a := range as {
		var p *pauseFlag
		if i < len(pauses) {
			p = pauses[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			e.contend(ctx, a, resources, rngs[i], p)
		}()
	}
	close(start)
	wg.Wait()
	return nil
}

// runPartition: 3|2 partition of the clients from the nodes, then healed.
func runPartition(ctx context.Context, e *env) error {
	m, o := e.split(e.cfg.Nodes/2+1, -1)
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Duration)
	defer cancel()
	go func() {
		end := e.rec.fault("partition", "group0|"+names(o)+"; group1|"+names(m),
			"clients of group 0 reach only "+names(m)+" (a majority), clients of group 1 only "+names(o))
		for _, i := range o {
			_ = e.cl.cut(0, i)
		}
		for _, i := range m {
			_ = e.cl.cut(1, i)
		}
		sleep(rctx, e.cfg.Duration/2)
		for _, i := range o {
			e.cl.heal(context.WithoutCancel(ctx), 0, i)
		}
		for _, i := range m {
			e.cl.heal(context.WithoutCancel(ctx), 1, i)
		}
		end()
	}()
	return e.contenders(rctx, e.cfg.Clients, 2, []string{"r"}, nil)
}

// runSlowNode: one node slower than the node timeout, one a little slow.
func runSlowNode(ctx context.Context, e *env) error {
	perm := e.rng.Perm(e.cfg.Nodes)
	slow, late := perm[0], perm[1]
	for _, x := range []struct {
		i int
		d time.Duration
	}{{slow, 4 * e.cfg.NodeTimeout}, {late, e.cfg.NodeTimeout / 2}} {
		if err := e.cl.slow(x.i, x.d); err != nil {
			return err
		}
		end := e.rec.fault("latency", nodeName(x.i), fmt.Sprintf("replies delayed %v (node timeout %v)", x.d, e.cfg.NodeTimeout))
		defer end()
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Duration)
	defer cancel()
	return e.contenders(rctx, e.cfg.Clients, 1, []string{"r"}, nil)
}

// runSplitVotes: many contenders at once on one resource (R10).
func runSplitVotes(ctx context.Context, e *env) error {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Duration)
	defer cancel()
	return e.contenders(rctx, 2*e.cfg.Clients, 1, []string{"r"}, nil)
}

// runRandom: seeded random faults while clients contend.
func runRandom(ctx context.Context, e *env) error {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Duration)
	defer cancel()
	resources, pauses, done := e.underFaults(rctx)
	err := e.contenders(rctx, e.cfg.Clients, 2, resources, pauses)
	return errors.Join(err, <-done)
}

// underFaults readies the resources and the clients' pause flags of a run
// under seeded random faults (random mode, read-write) and starts its
// fault schedule, whose error done gives once rctx ends.
func (e *env) underFaults(rctx context.Context) (resources []string, pauses []*pauseFlag, done <-chan error) {
	resources = make([]string, e.cfg.Resources)
	for i := range resources {
		resources[i] = fmt.Sprintf("r%d", i)
	}
	e.resources = resources
	pauses = make([]*pauseFlag, e.cfg.Clients)
	for i := range pauses {
		pauses[i] = new(pauseFlag)
	}
	frng := rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64()))
	ch := make(chan error, 1)
	go func() { ch <- e.faultSchedule(rctx, frng, pauses) }()
	return resources, pauses, ch
}

// faultSchedule injects one fault at a time, drawn from the seeded rng,
// until ctx ends.
func (e *env) faultSchedule(ctx context.Context, rng *rand.Rand, pauses []*pauseFlag) error {
	ttl := e.cfg.TTL
	for {
		sleep(ctx, ttl/2+time.Duration(rng.Int64N(int64(ttl))))
		if ctx.Err() != nil {
			return nil
		}
		kind := e.cfg.Faults[rng.IntN(len(e.cfg.Faults))]
		node := rng.IntN(e.cfg.Nodes)
		dur := ttl/4 + time.Duration(rng.Int64N(int64(ttl*3/4)))
		if node >= len(e.cl.procs) {
			// A cluster node (--cluster-nodes) gets a cluster fault.
			e.clusterFault(ctx, rng, node-len(e.cl.procs))
			continue
		}
		k, ok := findFault(kind)
		if !ok {
			return fmt.Errorf("torture: unknown fault %q", kind) // Validate refuses it first
		}
		if err := k.inject(ctx, e, rng, node, dur, pauses); err != nil {
			return err
		}
	}
}

// runReadWrite: readers and writers contend on several resources (RLock,
// WLock) under seeded random faults, as in random mode.
func runReadWrite(ctx context.Context, e *env) error {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Duration)
	defer cancel()
	resources, pauses, done := e.underFaults(rctx)
	var as []*actor
	var rngs []*rand.Rand
	for i := range e.cfg.Clients {
		a, err := e.newActor(fmt.Sprintf("c%d", i), i%2)
		if err != nil {
			cancel()
			return errors.Join(err, <-done)
		}
		as = append(as, a)
		rngs = append(rngs, rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64())))
	}
	var wg sync.WaitGroup
	for i, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.contendRW(rctx, a, resources, rngs[i], pauses[i])
		}()
	}
	wg.Wait()
	return <-done
}

// contendRW runs a client's read-write loop until ctx ends: two times in
// three a read lock, under which it reads the register, else a write lock,
// under which it writes it twice (pausing past its validity in between
// when pause is armed), each held a little, then released.
func (e *env) contendRW(ctx context.Context, a *actor, resources []string, rng *rand.Rand, pause *pauseFlag) {
	ttl := e.cfg.TTL
	for ctx.Err() == nil {
		r := resources[rng.IntN(len(resources))]
		mode := checker.ModeWrite
		if rng.IntN(3) < 2 {
			mode = checker.ModeRead
		}
		actx, cancel := context.WithTimeout(ctx, ttl)
		g, err := a.acquireAs(actx, r, ttl, 0, mode)
		cancel()
		if err != nil {
			continue
		}
		work := time.Duration(rng.Int64N(int64(ttl/10) + 1))
		if mode == checker.ModeRead {
			a.readUnder(g)
			sleep(ctx, work)
		} else {
			a.write(g)
			if pause.on.CompareAndSwap(true, false) {
				end := e.rec.fault("pause-client", a.name, "writer pauses 1.5 x ttl between two writes")
				sleep(ctx, ttl+ttl/2)
				end()
			} else {
				sleep(ctx, work)
			}
			a.write(g)
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
		_ = a.release(rctx, g)
		cancel()
	}
}
