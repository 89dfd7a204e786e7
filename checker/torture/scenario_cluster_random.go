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
//     NODE) while the clients use it.
//
// The checks are random mode's: mutual exclusion, fencing, linearizability
// and liveness. A master partitioned from its cluster bus is not among the
// faults: the clusters are on loopback without a proxy on their bus.

// The fault kinds of cluster-random (checker.Fault.Kind).
const (
	faultClusterKill      = "cluster-master-kill"
	faultClusterPause     = "cluster-master-pause"
	faultClusterFailover  = "cluster-failover"
	faultClusterMigration = "cluster-slot-migration"
)

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
	shards := make([][]shard, len(e.cl.redis))
	for n, c := range e.cl.redis {
		for i, m := range c.Masters() {
			shards[n] = append(shards[n], shard{master: m, replica: c.Replicas(i)[0]})
		}
	}
	frng := rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64()))
	done := make(chan error, 1)
	go func() { done <- e.clusterFaults(rctx, frng, shards, resources) }()
	err := e.contenders(rctx, e.cfg.Clients, 2, resources, pauses)
	return errors.Join(err, <-done)
}

// clusterFaults injects one cluster fault at a time until ctx ends.
func (e *env) clusterFaults(ctx context.Context, rng *rand.Rand, shards [][]shard, resources []string) error {
	ttl := e.cfg.TTL
	kinds := []string{faultClusterKill, faultClusterPause, faultClusterFailover, faultClusterMigration}
	broken := map[int]bool{} // nodes left alone after a fault the harness could not complete
	for {
		sleep(ctx, ttl/2+time.Duration(rng.Int64N(int64(ttl))))
		if ctx.Err() != nil {
			return nil
		}
		kind := kinds[rng.IntN(len(kinds))]
		n := rng.IntN(len(shards))
		if len(broken) == len(shards) {
			return nil
		}
		if broken[n] {
			continue
		}
		i := rng.IntN(len(shards[n]))
		s := &shards[n][i]
		c := e.cl.redis[n]
		dur := ttl/4 + time.Duration(rng.Int64N(int64(ttl*3/4)))
		var err error
		switch kind {
		case faultClusterKill:
			delay := e.cfg.restartDelay()
			end := e.rec.fault(kind, nodeName(n), fmt.Sprintf("master %s SIGKILLed, restart after %v", s.master.Addr(), delay))
			s.master.Kill()
			sleep(ctx, delay)
			err = s.master.Restart(context.WithoutCancel(ctx), 0)
			if err == nil {
				err = c.WaitOK(context.WithoutCancel(ctx))
			}
			end()
		case faultClusterPause:
			end := e.rec.fault(kind, nodeName(n), fmt.Sprintf("master %s SIGSTOPped for %v", s.master.Addr(), dur))
			s.master.Freeze()
			sleep(ctx, dur)
			s.master.Thaw()
			end()
		case faultClusterFailover:
			delay := ttl + ttl/4
			end := e.rec.fault(kind, nodeName(n), fmt.Sprintf("master %s SIGKILLed; its replica %s promoted by hand after %v; the old master rejoins as a replica", s.master.Addr(), s.replica.Addr(), delay))
			s.master.Kill()
			sleep(ctx, delay)
			err = failover(context.WithoutCancel(ctx), c, s)
			end()
		case faultClusterMigration:
			r := resources[rng.IntN(len(resources))]
			end := e.rec.fault(kind, nodeName(n), "the slot of "+r+" moves to the node's other master")
			err = migrateSlot(context.WithoutCancel(ctx), shards[n], redlock.HashTaggedKey(redlock.DefaultKeyPrefix, r))
			end()
		}
		if err != nil {
			// The harness could not complete the fault (Redis Cluster's
			// gossip not converging in time, a migration refused): the
			// node is left as it is, which the clients must survive as
			// a faulty node, and gets no more faults; the report shows
			// it as a fault of its own.
			e.log("%s on %s could not be completed, no more faults there: %v", kind, nodeName(n), err)
			e.rec.fault("harness-error", nodeName(n), fmt.Sprintf("%s not completed: %v", kind, err))()
			broken[n] = true
		}
	}
}

// failover promotes s's replica (its master is down), waits until the
// cluster serves every slot, restarts the old master, which rejoins as a
// replica, and swaps the two in s.
func failover(ctx context.Context, c *redisproc.Cluster, s *shard) error {
	if err := s.replica.Client().Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
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
			return fmt.Errorf("the old master %s did not rejoin as a replica: ROLE %v, %v", s.replica.Addr(), role, err)
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return c.WaitOK(ctx)
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
