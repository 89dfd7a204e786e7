package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// ClusterConfig describes a Redis Cluster of redis-server processes on
// loopback ports: Masters masters that share the hash slots evenly, each
// with Replicas replicas.
type ClusterConfig struct {
	// Masters is the number of masters, at least 1.
	Masters int
	// Replicas is the number of replicas of each master (0: none).
	Replicas int
	// Server is the configuration of every process (Persistence, Args,
	// Env, Wrapper, StartTimeout); its Dir and Port must be empty: each
	// process gets a data directory and a free port of its own.
	Server Config
	// NodeTimeout is cluster-node-timeout: how long a master may be
	// unreachable before its replicas start a failover. Default 5s.
	NodeTimeout time.Duration
	// ReplicaNoFailover sets cluster-replica-no-failover on every process
	// (a master is a replica once failed over): no replica ever promotes
	// itself; only Promote (CLUSTER FAILOVER TAKEOVER) does.
	ReplicaNoFailover bool
	// StateTimeout bounds the wait for cluster_state:ok. Default 30s.
	StateTimeout time.Duration
	// Partitionable puts a Gate in front of each process's cluster bus
	// port and data port, announced to the cluster (cluster-announce-bus-port,
	// cluster-announce-port), and gives each process a loopback source
	// address of its own (bind-source-addr 127.0.1.k), so that Isolate can
	// cut one process from the others, bus and replication, while clients
	// (which connect from 127.0.0.1, directly or through the announced
	// ports) still reach it. Default off.
	Partitionable bool
}

// Cluster is a Redis Cluster of redis-server processes. Its methods are safe
// for concurrent use.
type Cluster struct {
	cfg      ClusterConfig
	masters  []*Process
	replicas [][]*Process

	mu    sync.Mutex
	gates map[*Process]*gates // Partitionable only
}

// gates are the Gates in front of one process of a Partitionable cluster
// and the source address it connects to the others from.
type gates struct {
	src       string
	bus, data *Gate
}

// StartCluster starts cfg.Masters masters and their replicas
// (cluster-enabled servers), assigns each master an even range of the hash
// slots (CLUSTER ADDSLOTSRANGE) and each process its own config epoch
// (CLUSTER SET-CONFIG-EPOCH), joins them (CLUSTER MEET), attaches the
// replicas (CLUSTER REPLICATE) and waits until every process reports
// cluster_state:ok with every slot covered, polling CLUSTER INFO.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	switch {
	case cfg.Masters < 1:
		return nil, fmt.Errorf("redisproc: a cluster needs at least 1 master, got %d", cfg.Masters)
	case cfg.Masters > 1000:
		return nil, fmt.Errorf("redisproc: %d masters: at most 1000", cfg.Masters)
	case cfg.Replicas < 0:
		return nil, fmt.Errorf("redisproc: %d replicas per master: want 0 or more", cfg.Replicas)
	case cfg.Server.Dir != "" || cfg.Server.Port != 0:
		return nil, errors.New("redisproc: ClusterConfig.Server must not set Dir or Port: every process gets its own")
	}
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = 5 * time.Second
	}
	if cfg.StateTimeout <= 0 {
		cfg.StateTimeout = 30 * time.Second
	}
	c := &Cluster{cfg: cfg, replicas: make([][]*Process, cfg.Masters), gates: map[*Process]*gates{}}
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	start := func(replica bool) (*Process, error) {
		sc := c.cfg.Server
		sc.Args = append([]string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(c.cfg.NodeTimeout.Milliseconds(), 10),
			// A lost master takes only its slots down: the other
			// masters keep serving their locks.
			"--cluster-require-full-coverage", "no",
		}, sc.Args...)
		if c.cfg.ReplicaNoFailover {
			// On the masters too: a master becomes a replica after a
			// failover, and must not promote itself then either.
			sc.Args = append(sc.Args, "--cluster-replica-no-failover", "yes")
		}
		if !c.cfg.Partitionable {
			return Start(ctx, sc)
		}
		gs, err := c.newGates()
		if err != nil {
			return nil, err
		}
		sc.Args = append(sc.Args,
			"--bind-source-addr", gs.src,
			"--cluster-announce-ip", "127.0.0.1",
			"--cluster-announce-port", strconv.Itoa(gs.data.Port()),
			"--cluster-announce-bus-port", strconv.Itoa(gs.bus.Port()))
		p, err := Start(ctx, sc)
		if err != nil {
			gs.bus.Close()
			gs.data.Close()
			return nil, err
		}
		// The bus port is the data port plus 10000 (cluster-port 0).
		gs.bus.SetUpstream("127.0.0.1:" + strconv.Itoa(p.Port()+10000))
		gs.data.SetUpstream(p.Addr())
		c.mu.Lock()
		c.gates[p] = gs
		c.mu.Unlock()
		return p, nil
	}
	// Every process gets its own config epoch before it meets the others,
	// as redis-cli --cluster create does. Left at 0, the epochs are made
	// distinct by Redis' collision handling (the master with the lower
	// node id of two that tie takes a new epoch), which goes on after the
	// cluster is up and stops for a node once it is a replica: a replica
	// could keep its master's epoch, and the highest one, so that its
	// CLUSTER FAILOVER TAKEOVER (which takes a new epoch only when its
	// own is not the highest) claimed its master's slots with the
	// master's own epoch; the old master, restarted, won the tie by node
	// id and stayed a master (the torture's failover by hand waited for
	// it to rejoin as a replica for 30 s).
	epoch := 0
	setEpoch := func(p *Process) error {
		epoch++
		if err := p.Client().Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", epoch).Err(); err != nil {
			return fmt.Errorf("redisproc: CLUSTER SET-CONFIG-EPOCH %d on %s: %w", epoch, p.Addr(), err)
		}
		return nil
	}
	for i := 0; i < c.cfg.Masters; i++ {
		p, err := start(false)
		if err != nil {
			return err
		}
		c.masters = append(c.masters, p)
		if err := setEpoch(p); err != nil {
			return err
		}
		lo, hi := slotRange(i, c.cfg.Masters)
		if err := p.Client().Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("redisproc: CLUSTER ADDSLOTSRANGE %d %d on %s: %w", lo, hi, p.Addr(), err)
		}
		for r := 0; r < c.cfg.Replicas; r++ {
			rp, err := start(true)
			if err != nil {
				return err
			}
			c.replicas[i] = append(c.replicas[i], rp)
			if err := setEpoch(rp); err != nil {
				return err
			}
		}
	}
	all := c.Processes()
	meet := []any{"CLUSTER", "MEET", "127.0.0.1", all[0].Port()}
	if g, ok := c.gates[all[0]]; ok {
		// Through the first process's Gates, so that no link between
		// the processes bypasses them.
		meet = []any{"CLUSTER", "MEET", "127.0.0.1", g.data.Port(), g.bus.Port()}
	}
	for _, p := range all[1:] {
		if err := p.Client().Do(ctx, meet...).Err(); err != nil {
			return fmt.Errorf("redisproc: CLUSTER MEET from %s: %w", p.Addr(), err)
		}
	}
	if err := c.poll(ctx, "every node to know the others", func(ctx context.Context, p *Process) (bool, error) {
		nodes, err := p.Client().Do(ctx, "CLUSTER", "NODES").Text()
		return strings.Count(strings.TrimSpace(nodes), "\n")+1 == len(all), err
	}); err != nil {
		return err
	}
	replicaOf := map[string]string{} // replica id → its master's id
	for i, m := range c.masters {
		id, err := m.Client().Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("redisproc: CLUSTER MYID on %s: %w", m.Addr(), err)
		}
		for _, r := range c.replicas[i] {
			rid, err := r.Client().Do(ctx, "CLUSTER", "MYID").Text()
			if err != nil {
				return fmt.Errorf("redisproc: CLUSTER MYID on %s: %w", r.Addr(), err)
			}
			if err := r.Client().Do(ctx, "CLUSTER", "REPLICATE", id).Err(); err != nil {
				return fmt.Errorf("redisproc: CLUSTER REPLICATE on %s: %w", r.Addr(), err)
			}
			replicaOf[rid] = id
		}
	}
	if c.cfg.Replicas > 0 {
		if err := c.poll(ctx, "every replica's link to its master", func(ctx context.Context, p *Process) (bool, error) {
			info, err := p.Client().Info(ctx, "replication").Result()
			if err != nil {
				return false, err
			}
			if strings.Contains(info, "role:master") {
				return strings.Contains(info, "connected_slaves:"+strconv.Itoa(c.cfg.Replicas)), nil
			}
			return strings.Contains(info, "master_link_status:up"), nil
		}); err != nil {
			return err
		}
		// A node learns that another became a replica only from that
		// node's own messages, which may take seconds to come at a long
		// node timeout: until then its map lists the replica as a master
		// without slots, and a client or dlm doctor that reads that map
		// sees one master too many (doctor once saw a replica as a master
		// "with no replicas" so, in a fresh-clone run).
		if err := c.poll(ctx, "every node to know the replicas", func(ctx context.Context, p *Process) (bool, error) {
			nodes, err := p.Client().Do(ctx, "CLUSTER", "NODES").Text()
			if err != nil {
				return false, err
			}
			return knowsReplicas(nodes, replicaOf), nil
		}); err != nil {
			return err
		}
	}
	return c.WaitOK(ctx)
}

// knowsReplicas reports whether the CLUSTER NODES reply nodes lists each
// replica of replicaOf (id → its master's id) as a replica of that master.
func knowsReplicas(nodes string, replicaOf map[string]string) bool {
	known := 0
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		master, ok := replicaOf[f[0]]
		if !ok {
			continue
		}
		if !slices.Contains(strings.Split(f[2], ","), "slave") || f[3] != master {
			return false
		}
		known++
	}
	return known == len(replicaOf)
}

// poll calls cond on every running process until it holds for all, or the
// state timeout passes.
func (c *Cluster) poll(ctx context.Context, what string, cond func(ctx context.Context, p *Process) (bool, error)) error {
	deadline := time.Now().Add(c.cfg.StateTimeout)
	for {
		var last error
		ok := true
		for _, p := range c.Processes() {
			if !p.Running() || p.Frozen() {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			good, err := cond(pctx, p)
			cancel()
			if err != nil || !good {
				ok, last = false, err
				if err == nil {
					last = fmt.Errorf("not yet on %s", p.Addr())
				}
				break
			}
		}
		if ok {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: waited %v for %s: %v", ErrClusterState, c.cfg.StateTimeout, what, last)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, bounded by the deadline above
	}
}

// WaitOK waits until every running process reports cluster_state:ok and
// all 16384 slots assigned and ok (CLUSTER INFO), and every replica is
// attached to its master.
func (c *Cluster) WaitOK(ctx context.Context) error {
	return c.poll(ctx, "cluster_state:ok", func(ctx context.Context, p *Process) (bool, error) {
		info, err := p.Client().Do(ctx, "CLUSTER", "INFO").Text()
		if err != nil {
			return false, err
		}
		if strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:"+strconv.Itoa(Slots)) {
			return true, nil
		}
		// Say what the process reports, for the error at the deadline.
		var got []string
		for _, line := range strings.Split(info, "\n") {
			if k, _, _ := strings.Cut(line, ":"); slices.Contains([]string{"cluster_state", "cluster_slots_assigned", "cluster_slots_ok", "cluster_slots_pfail", "cluster_slots_fail", "cluster_known_nodes", "cluster_current_epoch"}, k) {
				got = append(got, strings.TrimSpace(line))
			}
		}
		return false, fmt.Errorf("not yet on %s (%s)", p.Addr(), strings.Join(got, ", "))
	})
}

// Masters returns the processes started as masters, in slot order: master
// i was given slots i*16384/M to (i+1)*16384/M-1. After a failover
// (Promote) one of them may be a replica.
func (c *Cluster) Masters() []*Process { return append([]*Process(nil), c.masters...) }

// Replicas returns the replicas started for master i.
func (c *Cluster) Replicas(i int) []*Process { return append([]*Process(nil), c.replicas[i]...) }

// Processes returns every process: the masters, then the replicas.
func (c *Cluster) Processes() []*Process {
	out := append([]*Process(nil), c.masters...)
	for _, rs := range c.replicas {
		out = append(out, rs...)
	}
	return out
}

// Addrs returns the addresses (127.0.0.1:port) of the masters.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.masters))
	for i, m := range c.masters {
		out[i] = m.Addr()
	}
	return out
}

// URL returns the node URL of the cluster, as redlock.ParseNodeURL reads it:
// the first master as the seed, the other masters as addr parameters.
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	q := url.Values{"cluster": {"true"}}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	return "redis://" + addrs[0] + "?" + q.Encode()
}

// MasterOf returns the index of the master started for slot: the last
// master whose range (slotRange) starts at or before it.
func (c *Cluster) MasterOf(slot int) int { return ((slot+1)*len(c.masters) - 1) / Slots }

// Promote makes the first replica of master i take its master's slots with
// CLUSTER FAILOVER TAKEOVER (no agreement with the master, none with the
// other masters: what a failover of a dead master amounts to), and waits
// until the cluster is ok again. The replica keeps what it had replicated:
// a write the master acknowledged but had not sent yet is lost.
func (c *Cluster) Promote(ctx context.Context, i int) error {
	if i < 0 || i >= len(c.masters) || len(c.replicas[i]) == 0 {
		return fmt.Errorf("redisproc: master %d has no replica to promote", i)
	}
	r := c.replicas[i][0]
	if err := r.Client().Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		return fmt.Errorf("redisproc: CLUSTER FAILOVER TAKEOVER on %s: %w", r.Addr(), err)
	}
	if err := c.poll(ctx, "the replica's promotion", func(ctx context.Context, p *Process) (bool, error) {
		if p != r {
			return true, nil
		}
		role, err := p.Client().Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master", err
	}); err != nil {
		return err
	}
	return c.WaitOK(ctx)
}

// MoveSlot migrates hash slot from the master that serves it to master to
// (an index of Masters), as redis-cli --cluster reshard does: the slot is
// marked IMPORTING on the target and MIGRATING on the source, its keys
// are moved (MIGRATE), and every master is told the slot's new owner
// (CLUSTER SETSLOT NODE). The source then redirects the slot's requests
// (MOVED) and ends its clients' subscriptions to the slot's shard
// channels (sunsubscribe). It returns once every process agrees.
func (c *Cluster) MoveSlot(ctx context.Context, slot, to int) error {
	if slot < 0 || slot >= Slots || to < 0 || to >= len(c.masters) {
		return fmt.Errorf("redisproc: MoveSlot(%d, %d): want a slot in [0, %d) and a master in [0, %d)", slot, to, Slots, len(c.masters))
	}
	id := func(p *Process) (string, error) { return p.Client().Do(ctx, "CLUSTER", "MYID").Text() }
	dst := c.masters[to]
	dstID, err := id(dst)
	if err != nil {
		return fmt.Errorf("redisproc: CLUSTER MYID on %s: %w", dst.Addr(), err)
	}
	var src *Process
	for _, m := range c.masters {
		if !m.Running() || m.Frozen() {
			continue
		}
		role, err := m.Client().Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			continue
		}
		owner, err := m.Client().Do(ctx, "CLUSTER", "SHARDS").Slice()
		if err == nil && ownsSlot(owner, slot, c.AnnouncedPort(m)) {
			src = m
			break
		}
	}
	if src == nil {
		return fmt.Errorf("redisproc: no running master serves slot %d", slot)
	}
	if src == dst {
		return nil
	}
	srcID, err := id(src)
	if err != nil {
		return fmt.Errorf("redisproc: CLUSTER MYID on %s: %w", src.Addr(), err)
	}
	steps := []struct {
		p    *Process
		args []any
	}{
		{dst, []any{"CLUSTER", "SETSLOT", slot, "IMPORTING", srcID}},
		{src, []any{"CLUSTER", "SETSLOT", slot, "MIGRATING", dstID}},
	}
	for _, st := range steps {
		if err := st.p.Client().Do(ctx, st.args...).Err(); err != nil {
			return fmt.Errorf("redisproc: %v on %s: %w", st.args, st.p.Addr(), err)
		}
	}
	for {
		keys, err := src.Client().Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 100).StringSlice()
		if err != nil {
			return fmt.Errorf("redisproc: CLUSTER GETKEYSINSLOT %d on %s: %w", slot, src.Addr(), err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", dst.Port(), "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Client().Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("redisproc: MIGRATE of slot %d from %s: %w", slot, src.Addr(), err)
		}
	}
	for _, p := range append([]*Process{dst, src}, c.masters...) {
		if !p.Running() || p.Frozen() {
			continue
		}
		if err := p.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err(); err != nil {
			return fmt.Errorf("redisproc: CLUSTER SETSLOT %d NODE on %s: %w", slot, p.Addr(), err)
		}
	}
	return c.poll(ctx, "every process to place the moved slot", func(ctx context.Context, p *Process) (bool, error) {
		shards, err := p.Client().Do(ctx, "CLUSTER", "SHARDS").Slice()
		return err == nil && ownsSlot(shards, slot, c.AnnouncedPort(dst)), err
	})
}

// ownsSlot reports whether the CLUSTER SHARDS reply shards gives slot to
// the shard whose master listens on port.
func ownsSlot(shards []any, slot, port int) bool {
	for _, sh := range shards {
		fields, _ := sh.([]any)
		var ranges []any
		master := false
		for i := 0; i+1 < len(fields); i += 2 {
			switch fields[i] {
			case "slots":
				ranges, _ = fields[i+1].([]any)
			case "nodes":
				nodes, _ := fields[i+1].([]any)
				for _, n := range nodes {
					nf, _ := n.([]any)
					var p int64
					var role string
					for j := 0; j+1 < len(nf); j += 2 {
						switch nf[j] {
						case "port":
							p, _ = nf[j+1].(int64)
						case "role":
							role, _ = nf[j+1].(string)
						}
					}
					master = master || (int(p) == port && role == "master")
				}
			}
		}
		if !master {
			continue
		}
		for i := 0; i+1 < len(ranges); i += 2 {
			lo, _ := ranges[i].(int64)
			hi, _ := ranges[i+1].(int64)
			if int64(slot) >= lo && int64(slot) <= hi {
				return true
			}
		}
	}
	return false
}

// Close kills every process, removes their data directories and stops
// the Gates of a Partitionable cluster.
func (c *Cluster) Close() {
	for _, p := range c.Processes() {
		p.Close()
	}
	c.mu.Lock()
	gs := c.gates
	c.gates = map[*Process]*gates{}
	c.mu.Unlock()
	for _, g := range gs {
		g.bus.Close()
		g.data.Close()
	}
}

// newGates starts the Gates of the next process of a Partitionable
// cluster, with its source address (127.0.1.k, k counting from 1).
func (c *Cluster) newGates() (*gates, error) {
	c.mu.Lock()
	k := len(c.gates) + 1
	c.mu.Unlock()
	if k > 254 {
		return nil, fmt.Errorf("redisproc: a partitionable cluster has at most 254 processes")
	}
	bus, err := StartGate("")
	if err != nil {
		return nil, err
	}
	data, err := StartGate("")
	if err != nil {
		bus.Close()
		return nil, err
	}
	return &gates{src: fmt.Sprintf("127.0.1.%d", k), bus: bus, data: data}, nil
}

// ErrNotPartitionable is returned by Isolate and Rejoin on a cluster
// started without ClusterConfig.Partitionable.
var ErrNotPartitionable = errors.New("redisproc: the cluster was started without Partitionable")

// Isolate cuts process p from the rest of its cluster, both ways: its
// cluster bus links and its replication links (to its master or from its
// replicas) carry nothing until Rejoin, while clients connecting from
// 127.0.0.1 still reach p, on its port or its announced one. The others
// mark p failed after the node timeout, and p finds itself in a minority.
func (c *Cluster) Isolate(p *Process) error { return c.isolate(p, true) }

// Rejoin undoes Isolate: the held links are closed and the processes
// connect again. Call WaitOK to wait for the cluster to agree again.
func (c *Cluster) Rejoin(p *Process) error { return c.isolate(p, false) }

func (c *Cluster) isolate(p *Process, cut bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.cfg.Partitionable {
		return ErrNotPartitionable
	}
	gp, ok := c.gates[p]
	if !ok {
		return fmt.Errorf("redisproc: %s is not a process of this cluster", p.Addr())
	}
	var others []string
	for q, gq := range c.gates {
		if q == p {
			continue
		}
		others = append(others, gq.src)
		for _, g := range []*Gate{gq.bus, gq.data} {
			if cut {
				g.Hold(gp.src)
			} else {
				g.Release(gp.src)
			}
		}
	}
	for _, g := range []*Gate{gp.bus, gp.data} {
		if cut {
			g.Hold(others...)
		} else {
			g.Release(others...)
		}
	}
	return nil
}

// AnnouncedPort returns the port the cluster announces for p, on which
// clients that follow the slot map reach it: p's Gate on a Partitionable
// cluster, p's own port otherwise.
func (c *Cluster) AnnouncedPort(p *Process) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.gates[p]; ok {
		return g.data.Port()
	}
	return p.Port()
}

// StartClusters starts n clusters as StartCluster does, at the same time: a
// new master serves only about two seconds after it started (Redis
// Cluster's writable delay), so n clusters take about as long as one. On
// error it closes the clusters it started.
func StartClusters(ctx context.Context, n int, cfg ClusterConfig) ([]*Cluster, error) {
	out := make([]*Cluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = StartCluster(ctx, cfg)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range out {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return out, nil
}

// slotRange is the range of slots master i of m is started with.
func slotRange(i, m int) (lo, hi int) { return i * Slots / m, (i+1)*Slots/m - 1 }
