package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"dlm/redlock"
	"dlm/redlock/redisproc"
)

// cluster-random: random mode over nodes that are Redis Clusters (two
// masters each, a replica per master with cluster-replica-no-failover yes).
// The clients contend on several resources, as in random mode, while a
// seeded schedule hits one cluster node at a time with one of:
//
//   - cluster-master-kill: a master is SIGKILLed and restarts after the
//     restart delay (Config.restartDelay: ttl + ttl/4 with DelayedRestart);
//   - cluster-master-pause: a master is stopped (SIGSTOP), then resumed;
//   - cluster-failover: a master is SIGKILLed and, after the ttl plus a
//     quarter, its replica is promoted by hand (CLUSTER FAILOVER
//     TAKEOVER), as docs/operations.md prescribes; the old master then
//     restarts and rejoins as a replica;
//   - cluster-slot-migration: the slot of a resource moves to the node's
//     other master (CLUSTER SETSLOT IMPORTING / MIGRATING, MIGRATE, SETSLOT
//     NODE) while the clients use it;
//   - cluster-master-partition: a master is cut from the rest of its
//     cluster, bus and replication (redisproc's Gates), for twice the
//     cluster's node timeout or more, while the clients still reach it:
//     the others mark it failed, it finds itself in a minority; then the
//     cut heals.
//
// The checks are random mode's: mutual exclusion, fencing, linearizability
// and liveness. Random mode with --cluster-nodes draws the same faults for
// its cluster nodes (clusterFault).

// The fault kinds of cluster-random (checker.Fault.Kind).
const (
	faultClusterKill      = "cluster-master-kill"
	faultClusterPause     = "cluster-master-pause"
	faultClusterFailover  = "cluster-failover"
	faultClusterMigration = "cluster-slot-migration"
	faultClusterPartition = "cluster-master-partition"
)

// randomClusterMasters is the number of masters of random mode's cluster
// nodes: three, so that a master cut from its cluster leaves a majority
// of masters that keeps serving the other slots.
const randomClusterMasters = 3

// shard is one master of a cluster node and its replica, swapped by a
// failover.
type shard struct{ master, replica *redisproc.Process }

// runClusterRandom is cluster-random.
func runClusterRandom(ctx context.Context, e *env) error {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Duration)
	defer cancel()
	resources := make([]string, e.cfg.Resources)
	for i := range resources {
		resources[i] = fmt.Sprintf("r%d", i)
	}
	pauses := make([]*pauseFlag, e.cfg.Clients)
	for i := range pauses {
		pauses[i] = new(pauseFlag)
	}
	e.resources = resources
	frng := rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64()))
	done := make(chan error, 1)
	go func() { done <- e.clusterFaults(rctx, frng) }()
	err := e.contenders(rctx, e.cfg.Clients, 2, resources, pauses)
	return errors.Join(err, <-done)
}

// clusterFaults injects one cluster fault at a time until ctx ends.
func (e *env) clusterFaults(ctx context.Context, rng *rand.Rand) error {
	ttl := e.cfg.TTL
	for {
		sleep(ctx, ttl/2+time.Duration(rng.Int64N(int64(ttl))))
		if ctx.Err() != nil {
			return nil
		}
		if len(e.brokenClusters) == len(e.cl.redis) {
			return nil
		}
		e.clusterFault(ctx, rng, rng.IntN(len(e.cl.redis)))
	}
}

// clusterShards returns the masters of cluster node c (an index of
// e.cl.redis) with their replicas (nil without), made on first use; a
// failover swaps a master and its replica in place.
func (e *env) clusterShards(c int) []shard {
	if e.shards == nil {
		e.shards = make([][]shard, len(e.cl.redis))
		for n, rc := range e.cl.redis {
			for i, m := range rc.Masters() {
				var r *redisproc.Process
				if reps := rc.Replicas(i); len(reps) > 0 {
					r = reps[0]
				}
				e.shards[n] = append(e.shards[n], shard{master: m, replica: r})
			}
		}
	}
	return e.shards[c]
}

// clusterFault injects one fault, drawn from rng, on cluster node c (an
// index of e.cl.redis; its node index is after the single servers), and
// returns once it is over. A fault the harness could not complete leaves
// the node alone from then on.
func (e *env) clusterFault(ctx context.Context, rng *rand.Rand, c int) {
	ttl := e.cfg.TTL
	kinds := []string{faultClusterKill, faultClusterPause, faultClusterMigration, faultClusterPartition}
	shards := e.clusterShards(c)
	if shards[0].replica != nil {
		kinds = append(kinds, faultClusterFailover)
	}
	kind := kinds[rng.IntN(len(kinds))]
	i := rng.IntN(len(shards))
	dur := ttl/4 + time.Duration(rng.Int64N(int64(ttl*3/4)))
	cut := 2*clusterNodeTimeout + time.Duration(rng.Int64N(int64(ttl)))
	r := e.resources[rng.IntN(len(e.resources))]
	if e.brokenClusters[c] {
		return
	}
	s := &shards[i]
	rc := e.cl.redis[c]
	node := nodeName(len(e.cl.procs) + c)
	var err error
	switch kind {
	case faultClusterKill:
		delay := e.cfg.restartDelay()
		end := e.rec.fault(kind, node, fmt.Sprintf("master %s SIGKILLed, restart after %v", s.master.Addr(), delay))
		s.master.Kill()
		sleep(ctx, delay)
		err = s.master.Restart(context.WithoutCancel(ctx), 0)
		if err == nil {
			err = rc.WaitOK(context.WithoutCancel(ctx))
		}
		end()
	case faultClusterPause:
		end := e.rec.fault(kind, node, fmt.Sprintf("master %s SIGSTOPped for %v", s.master.Addr(), dur))
		s.master.Freeze()
		sleep(ctx, dur)
		s.master.Thaw()
		end()
	case faultClusterFailover:
		delay := ttl + ttl/4
		end := e.rec.fault(kind, node, fmt.Sprintf("master %s SIGKILLed; its replica %s promoted by hand after %v; the old master rejoins as a replica", s.master.Addr(), s.replica.Addr(), delay))
		err = failoverByHand(ctx, rc, s, delay, e.log)
		end()
	case faultClusterMigration:
		end := e.rec.fault(kind, node, "the slot of "+r+" moves to another master of the node")
		err = migrateSlot(context.WithoutCancel(ctx), shards, redlock.HashTaggedKey(redlock.DefaultKeyPrefix, r))
		end()
	case faultClusterPartition:
		end := e.rec.fault(kind, node, fmt.Sprintf("master %s cut from its cluster (bus and replication) for %v; clients still reach it", s.master.Addr(), cut.Round(time.Millisecond)))
		err = rc.Isolate(s.master)
		if err == nil {
			sleep(ctx, cut)
			err = rc.Rejoin(s.master)
		}
		if err == nil {
			err = rc.WaitOK(context.WithoutCancel(ctx))
		}
		end()
	}
	if err != nil {
		// The harness could not complete the fault (Redis Cluster's
		// gossip not converging in time, a migration refused): the
		// node is left as it is, which the clients must survive as
		// a faulty node, and gets no more faults; the report shows
		// it as a fault of its own.
		e.log("%s on %s could not be completed, no more faults there: %v", kind, node, err)
		e.rec.fault("harness-error", node, fmt.Sprintf("%s not completed: %v", kind, err))()
		if e.brokenClusters == nil {
			e.brokenClusters = map[int]bool{}
		}
		e.brokenClusters[c] = true
	}
}

// failoverByHand closes the slots left open in c (closeOpenSlots, saying
// which through logf), kills s's master once its replica caught up with it
// (replicaCaughtUp), and promotes the replica after delay (failover).
func failoverByHand(ctx context.Context, c *redisproc.Cluster, s *shard, delay time.Duration, logf func(format string, args ...any)) error {
	if err := closeOpenSlots(context.WithoutCancel(ctx), c, logf); err != nil {
		return err
	}
	if err := replicaCaughtUp(context.WithoutCancel(ctx), s); err != nil {
		return err
	}
	s.master.Kill()
	sleep(ctx, delay)
	return failover(context.WithoutCancel(ctx), c, s)
}

// replicaCaughtUp waits until s's replica sees its master as the master
// sees itself (the same slots and config epoch) and knows the cluster's
// current epoch, so that a failover by hand after the master's death
// gives the replica every slot of its master with an epoch above every
// claim. A replica that lags (after its own restart, or a slot moved to
// its master a moment ago) and is promoted takes only the slots it knew
// of, with an epoch the restarted old master may still outbid: a slot
// then stays on the dead master, failed, or the old master comes back a
// master. It also waits until the replica holds its master's data: its
// replication link is up and has brought what the master had written
// when the wait began (inSync). An old master that rejoined as a replica
// syncs only after a while (repl-diskless-sync-delay, 5 s by default)
// and until then holds the data of its life as a master; promoted then,
// it lost every write made since, and had keys of slots that had moved
// away, which Redis opens as importing when it restarts.
func replicaCaughtUp(ctx context.Context, s *shard) error {
	deadline := time.Now().Add(30 * time.Second)
	masterInfo, ierr := s.master.Client().Do(ctx, "INFO", "replication").Text()
	if ierr != nil {
		return fmt.Errorf("the master %s of the replica to promote: INFO replication: %w", s.master.Addr(), ierr)
	}
	for {
		m, merr := selfView(ctx, s.master)
		r, rerr := viewOf(ctx, s.replica, m.id)
		replicaInfo, ierr := s.replica.Client().Do(ctx, "INFO", "replication").Text()
		synced := ierr == nil && inSync(masterInfo, replicaInfo)
		if merr == nil && rerr == nil && caughtUp(m, r) && synced {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replica %s of %s did not catch up with its master in 30 s: master %+v (%v), replica's view %+v (%v); replication: master %s, replica %s (%v)",
				s.replica.Addr(), s.master.Addr(), m, merr, r, rerr,
				infoFields(masterInfo, "master_repl_offset"), infoFields(replicaInfo, "master_link_status", "slave_repl_offset"), ierr)
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

// inSync reports whether a replica whose INFO replication is replicaInfo
// holds what its master had written when the master's INFO replication
// was masterInfo: its link is up and its replication offset reached the
// master's.
func inSync(masterInfo, replicaInfo string) bool {
	want, err1 := strconv.ParseInt(infoFields(masterInfo, "master_repl_offset"), 10, 64)
	got, err2 := strconv.ParseInt(infoFields(replicaInfo, "slave_repl_offset"), 10, 64)
	return err1 == nil && err2 == nil && infoFields(replicaInfo, "master_link_status") == "up" && got >= want
}

// infoFields returns the values of the named fields of an INFO reply,
// space-separated, in the order asked.
func infoFields(info string, names ...string) string {
	var out []string
	for _, name := range names {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
				out = append(out, v)
				break
			}
		}
	}
	return strings.Join(out, " ")
}

// clusterView is what one process's CLUSTER NODES and CLUSTER INFO say of
// one node: its config epoch and slots, and the process's current epoch.
type clusterView struct {
	id, epoch  string
	slots      string   // the slots the node serves, as CLUSTER NODES lists them
	open       []int    // slots open on the process itself (importing or migrating)
	openFields []string // how CLUSTER NODES lists them: "[6248-<-id]", "[6248->-id]"
	current    int
}

// selfView is p's view of itself.
func selfView(ctx context.Context, p *redisproc.Process) (clusterView, error) {
	return viewOf(ctx, p, "")
}

// viewOf is p's view of node id ("": of itself).
func viewOf(ctx context.Context, p *redisproc.Process, id string) (clusterView, error) {
	nodes, err := p.Client().Do(ctx, "CLUSTER", "NODES").Text()
	if err != nil {
		return clusterView{}, err
	}
	info, err := p.Client().Do(ctx, "CLUSTER", "INFO").Text()
	if err != nil {
		return clusterView{}, err
	}
	v, ok := parseView(nodes, info, id)
	if !ok {
		return v, fmt.Errorf("%s does not list node %q", p.Addr(), id)
	}
	return v, nil
}

// parseView is the view of node id ("": of the process itself) in one
// process's CLUSTER NODES and CLUSTER INFO; false when nodes does not list
// it.
func parseView(nodes, info, id string) (clusterView, bool) {
	var v clusterView
	for _, line := range strings.Split(info, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_current_epoch:"); ok {
			v.current, _ = strconv.Atoi(c)
		}
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || (id == "" && !strings.Contains(f[2], "myself")) || (id != "" && f[0] != id) {
			continue
		}
		v.id, v.epoch = f[0], f[6]
		var served []string
		for _, r := range f[8:] {
			// "[slot-<-id]" (importing) and "[slot->-id]" (migrating):
			// Redis lists them only on the process's own line.
			if open, ok := strings.CutPrefix(r, "["); ok {
				slot, _, _ := strings.Cut(open, "-")
				if n, err := strconv.Atoi(slot); err == nil {
					v.open = append(v.open, n)
				}
				v.openFields = append(v.openFields, r)
				continue
			}
			served = append(served, r)
		}
		v.slots = strings.Join(served, " ")
		return v, true
	}
	return v, false
}

// closeOpenSlots closes every slot open (importing or migrating) on a live
// process of c: CLUSTER SETSLOT STABLE. Each fault runs alone and
// migrateSlot closes the slots it opens, so a slot open between two faults
// is not the harness's. Redis opens one by itself, for one, when a master
// starts with keys of a slot that its configuration gives to another
// master ("I have keys for slot ..., but the slot is assigned to another
// node. Setting it to importing state."). A process importing a slot ignores every other
// node's claim of it: it would never see a replica promoted by hand take
// that slot over, and it could keep routing the slot to a dead master.
// Each slot closed is said through logf.
func closeOpenSlots(ctx context.Context, c *redisproc.Cluster, logf func(format string, args ...any)) error {
	var errs []error
	for _, p := range c.Processes() {
		if !p.Running() || p.Frozen() {
			continue
		}
		v, err := selfView(ctx, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, slot := range v.open {
			if err := p.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE").Err(); err != nil {
				errs = append(errs, fmt.Errorf("closing slot %d, left open on %s: %w", slot, p.Addr(), err))
				continue
			}
			logf("slot %d was left open on %s (its CLUSTER NODES line: %s %s); closed it", slot, p.Addr(), v.slots, strings.Join(v.openFields, " "))
		}
	}
	return errors.Join(errs...)
}

// caughtUp reports whether r, a replica's view of its master, agrees with
// m, the master's view of itself: the same config epoch and slots, and a
// current epoch no lower.
func caughtUp(m, r clusterView) bool {
	return r.epoch == m.epoch && r.slots == m.slots && r.current >= m.current
}

// failover promotes s's replica (its master is down), waits until every
// live process knows it as the master of the old master's slots with a
// config epoch above the old master's (tookOver), restarts the old
// master, which rejoins as a replica, and swaps the two in s.
func failover(ctx context.Context, c *redisproc.Cluster, s *shard) error {
	old, err := masterView(ctx, s.replica)
	if err != nil {
		return err
	}
	if err := s.replica.Client().Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		return err
	}
	if err := tookOver(ctx, c, s.replica, old); err != nil {
		return err
	}
	if err := c.WaitOK(ctx); err != nil {
		return err
	}
	if err := s.master.Restart(ctx, 0); err != nil {
		return err
	}
	s.master, s.replica = s.replica, s.master
	deadline := time.Now().Add(30 * time.Second)
	for {
		role, err := s.replica.Client().Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "slave" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the old master %s did not rejoin as a replica: ROLE %v, %v; the last lines of its log:\n%s", s.replica.Addr(), role, err, lastLines(s.replica.Log(), 20))
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return c.WaitOK(ctx)
}

// masterView is replica p's view of its master.
func masterView(ctx context.Context, p *redisproc.Process) (clusterView, error) {
	nodes, err := p.Client().Do(ctx, "CLUSTER", "NODES").Text()
	if err != nil {
		return clusterView{}, err
	}
	for _, line := range strings.Split(nodes, "\n") {
		if f := strings.Fields(line); len(f) >= 8 && strings.Contains(f[2], "myself") && strings.Contains(f[2], "slave") {
			return viewOf(ctx, p, f[3])
		}
	}
	return clusterView{}, fmt.Errorf("%s is not a replica", p.Addr())
}

// tookOver waits until every live process of c knows the replica p,
// promoted by CLUSTER FAILOVER TAKEOVER, as the master of the slots of its
// old master (old: p's view of it before) with a config epoch above the
// old master's. The old master restarted before the others heard of the
// takeover claims its slots again with its own epoch, and one restarted
// against a claim with an epoch no higher than its own keeps them (Redis
// breaks a tie of epochs by node id): then it comes back a master.
func tookOver(ctx context.Context, c *redisproc.Cluster, p *redisproc.Process, old clusterView) error {
	id, err := p.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return err
	}
	oldEpoch, err := strconv.Atoi(old.epoch)
	if err != nil {
		return fmt.Errorf("the old master's config epoch %q: %w", old.epoch, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pending error
		for _, q := range c.Processes() {
			if q == p || !q.Running() || q.Frozen() {
				continue
			}
			v, err := viewOf(ctx, q, id)
			epoch, _ := strconv.Atoi(v.epoch)
			if err != nil || v.slots != old.slots || epoch <= oldEpoch {
				pending = fmt.Errorf("%s sees the promoted replica %s with config epoch %s and slots %q (%v); want an epoch above the old master's %d and its slots %q",
					q.Addr(), p.Addr(), v.epoch, v.slots, err, oldEpoch, old.slots)
				break
			}
		}
		if self, err := selfView(ctx, p); err == nil {
			if epoch, _ := strconv.Atoi(self.epoch); epoch <= oldEpoch {
				return fmt.Errorf("the promoted replica %s took config epoch %d, not above its old master's %d: the old master would win its slots back", p.Addr(), epoch, oldEpoch)
			}
		}
		if pending == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the takeover did not reach every process in 30 s: %w", pending)
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

// migrateSlot moves the slot of key from the master that serves it to
// another master of the node, with its keys.
func migrateSlot(ctx context.Context, shards []shard, key string) error {
	if len(shards) < 2 {
		return nil
	}
	m0 := shards[0].master.Client()
	slot, err := m0.Do(ctx, "CLUSTER", "KEYSLOT", key).Int()
	if err != nil {
		return err
	}
	var src, dst *redisproc.Process
	for _, s := range shards {
		owns, err := ownsSlot(ctx, s.master, slot)
		if err != nil {
			return err
		}
		if owns {
			src = s.master
		} else if dst == nil {
			dst = s.master
		}
	}
	if src == nil || dst == nil {
		return fmt.Errorf("no owner of slot %d or no other master", slot)
	}
	srcID, err := src.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return err
	}
	dstID, err := dst.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return err
	}
	if err := dst.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err(); err != nil {
		return err
	}
	if err := src.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err(); err != nil {
		return err
	}
	for {
		keys, err := src.Client().Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 100).StringSlice()
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
		// REPLACE: a key that exists on the source is the source's to
		// serve (a client reaches the target for it only when the
		// source lacks it), so a copy on the target can only be what a
		// MIGRATE that timed out on a loaded machine left there, before
		// the source deleted its own.
		args := []any{"MIGRATE", "127.0.0.1", dst.Port(), "", 0, 30000, "REPLACE", "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Client().Do(ctx, args...).Err(); err != nil && !strings.Contains(err.Error(), "NOKEY") {
			return err
		}
	}
	for _, p := range []*redisproc.Process{dst, src} {
		if err := p.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err(); err != nil {
			return err
		}
	}
	// The other masters are told too, as redis-cli's reshard does: one
	// that learnt the slot's new owner only by gossip could still place
	// it on the old one, and after a failover of the new owner keep it
	// failed for good (seen as cluster_slots_fail:1 for more than 30 s on
	// one process, after a migration and then a failover of the node).
	for _, s := range shards {
		if p := s.master; p != src && p != dst && p.Running() && !p.Frozen() {
			_ = p.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err() // best effort: gossip tells it anyway
		}
	}
	return nil
}

// ownsSlot reports whether master p serves slot, by CLUSTER SLOTS as p
// sees it.
func ownsSlot(ctx context.Context, p *redisproc.Process, slot int) (bool, error) {
	nodes, err := p.Client().Do(ctx, "CLUSTER", "NODES").Text()
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "myself") {
			continue
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated or imported
			}
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil && a <= slot && slot <= b {
				return true, nil
			}
		}
	}
	return false, nil
}

// lastLines returns the last n lines of s, for an error's message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
