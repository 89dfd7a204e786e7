package torture

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"dlm/redlock"
	"dlm/redlock/redisproc"
)

// cluster-master-partitioned: the configuration the docs call unsafe, a
// cluster node whose replicas may promote themselves. The nodes are Redis
// Clusters of three masters with a replica each (without
// cluster-replica-no-failover when Config.PromotableReplicas, the default
// of this scenario; the clients then opt in with
// redlock.WithPromotableReplicas, and the run first checks that a client
// without it refuses the nodes). On one node of a majority m, the master
// of r's slot is cut from the rest of its cluster, bus and replication
// (redisproc.Cluster.Isolate), while the clients still reach it; client A
// then locks r on exactly m (a third party holds r elsewhere), so that
// A's key reaches the cut master but not its replica. After the cluster's
// node timeout the other masters mark the cut master failed and its
// replica is elected in its place, without A's key; client B then locks r
// on the nodes outside m and the promoted replica: two holders while A's
// validity runs (B tries for a second while the master is still cut, then
// once the cut healed: the old master then becomes a replica of the new
// one and drops A's key). The master kept taking writes until it found itself in
// a minority, and the replica was promoted a little later: no node
// timeout orders the promotion after the expiry of the master's last
// grants (redlock.ErrPromotableReplica).
//
// With --promotable-replicas=false the replicas never promote themselves
// (the configuration the clients accept by default): the cut master keeps
// r's slot, refusing requests once in a minority, and B gets r only
// after A's validity.

// promotionWait bounds the wait for a replica's promotion, once the other
// masters marked its master failed.
const promotionWait = 20 * time.Second

// runClusterPartition is cluster-master-partitioned.
func runClusterPartition(ctx context.Context, e *env) error {
	rcs := e.cl.redis
	if e.cfg.PromotableReplicas {
		// The default client refuses these nodes.
		c, err := e.dialRefusing()
		if err == nil {
			_ = c.Close()
			return errors.New("torture: a client without WithPromotableReplicas accepted cluster nodes whose replicas may promote themselves")
		}
		if !errors.Is(err, redlock.ErrPromotableReplica) {
			return fmt.Errorf("torture: a client without WithPromotableReplicas: %w", err)
		}
		e.log("a client without WithPromotableReplicas refuses the nodes: %v", err)
	}
	a, b, err := e.twoClients()
	if err != nil {
		return err
	}
	masters := make([]int, len(rcs))
	for i, c := range rcs {
		if masters[i], err = slotMaster(ctx, c, "r"); err != nil {
			return err
		}
	}
	m, o := e.split(a.client.Quorum(), -1)
	victim := m[e.rng.IntN(len(m))]
	rc := rcs[victim]
	vm := rc.Masters()[masters[victim]]
	replica := rc.Replicas(masters[victim])[0]
	if err := e.holdR(ctx, masters, o); err != nil {
		return err
	}
	e.log("cutting the master %s of r's slot on %s from its cluster (bus and replication); clients still reach it", vm.Addr(), nodeName(victim))
	endCut := e.rec.fault(faultClusterPartition, nodeName(victim), fmt.Sprintf("master %s of r's slot cut from its cluster (bus and replication), clients still reach it; replicas promotable %v", vm.Addr(), e.cfg.PromotableReplicas))
	healed := false
	heal := func() error {
		if healed {
			return nil
		}
		healed = true
		defer endCut()
		if err := rc.Rejoin(vm); err != nil {
			return err
		}
		return rc.WaitOK(context.WithoutCancel(ctx))
	}
	defer func() { _ = heal() }()
	if err := rc.Isolate(vm); err != nil {
		return err
	}
	g, err := e.acquireBesideThirdParty(ctx, a, masters, m, o)
	if err != nil {
		return fmt.Errorf("torture: A could not acquire on %s while the master was cut: %w", names(m), err)
	}
	a.write(g)
	if err := waitFailed(ctx, rc, vm); err != nil {
		return err
	}
	if e.cfg.PromotableReplicas {
		if err := waitRole(ctx, replica, "master", promotionWait); err != nil {
			return err
		}
		e.log("%s's replica %s promoted itself, %v before A's validity ends", nodeName(victim), replica.Addr(), time.Until(g.lock.Until()).Round(time.Millisecond))
	} else {
		// As long as a promotion would have taken (the replica's
		// election delay is 500 ms plus up to 500 ms): none comes.
		sleep(ctx, 2*time.Second)
	}
	// B tries while the master is still cut, for a second: a client
	// whose slot map came from the cut master, which still claims the
	// slot (and refuses it, in a minority), sends it there. Then the cut
	// heals: the old master learns of the promotion and becomes a
	// replica of its replica, dropping A's key, and every client is
	// sent to the new master.
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	gb, err := b.acquireEach(bctx, "r", e.cfg.TTL, 20*time.Millisecond)
	cancel()
	if err != nil {
		e.log("B did not get r while the master was cut (%v); healing the cut", err)
		if err := heal(); err != nil {
			return fmt.Errorf("torture: heal the cut on %s: %w", nodeName(victim), err)
		}
		bctx, cancel := context.WithTimeout(ctx, 3*e.cfg.TTL)
		gb, err = b.acquireEach(bctx, "r", e.cfg.TTL, 20*time.Millisecond)
		cancel()
	}
	if err == nil {
		e.log("B holds r, %v before A's validity ends", time.Until(g.lock.Until()).Round(time.Millisecond))
		bWritesAfterA(ctx, a, b, g, gb)
	}
	if err := heal(); err != nil {
		return fmt.Errorf("torture: heal the cut on %s: %w", nodeName(victim), err)
	}
	return nil
}

// dialRefusing dials a client of group 0 with the run's settings but
// without WithPromotableReplicas.
func (e *env) dialRefusing() (*redlock.Client, error) {
	cfg := e.cfg
	cfg.PromotableReplicas = false
	d := *e
	d.cfg = cfg
	a, err := d.dialActor("default", 0, 1)
	if err != nil {
		return nil, err
	}
	return a.client, nil
}

// waitFailed waits until every other master of rc marks p failed (FAIL,
// not only suspected).
func waitFailed(ctx context.Context, rc *redisproc.Cluster, p *redisproc.Process) error {
	id, err := p.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return fmt.Errorf("torture: CLUSTER MYID on %s: %w", p.Addr(), err)
	}
	deadline := time.Now().Add(promotionWait)
	for {
		all := true
		for _, q := range rc.Masters() {
			if q == p || !q.Running() {
				continue
			}
			nodes, err := q.Client().Do(ctx, "CLUSTER", "NODES").Text()
			failed := false
			for _, line := range strings.Split(nodes, "\n") {
				if f := strings.Fields(line); err == nil && len(f) > 2 && f[0] == id {
					failed = slices.Contains(strings.Split(f[2], ","), "fail")
				}
			}
			all = all && failed
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("torture: %w: the other masters did not mark the cut master %s failed within %v", redisproc.ErrClusterState, p.Addr(), promotionWait)
		}
		sleep(ctx, 20*time.Millisecond) // polling interval, bounded by the deadline
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// waitRole waits until p reports role (ROLE) or d passed.
func waitRole(ctx context.Context, p *redisproc.Process, role string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		r, err := p.Client().Do(ctx, "ROLE").Slice()
		if err == nil && len(r) > 0 && r[0] == role {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("torture: %w: %s is not %s after %v: ROLE %v, %v", redisproc.ErrClusterState, p.Addr(), role, d, r, err)
		}
		sleep(ctx, 20*time.Millisecond) // polling interval, bounded by the deadline
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
