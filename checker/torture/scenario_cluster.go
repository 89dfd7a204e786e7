package torture

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dlm/redlock"
	"dlm/redlock/redisproc"
)

// The scenarios whose nodes are Redis Clusters (redlock's cluster nodes):
// each of the --nodes nodes is a cluster of clusterMasters masters, reached
// directly (no proxy: a cluster client finds the masters itself). Client A
// locks exactly a majority of the nodes (the master of the resource's slot
// on each other node is down while it acquires); then, on one node of A's
// majority, the master of the resource's slot loses A's key:
//
//   - cluster-master-killed: it is killed and restarts at once, empty
//     (restart-without-persistence for one master of a cluster), or after
//     the ttl (--delayed-restart), or it keeps its keys (--persistence);
//   - cluster-replica-promoted: it dies and its replica takes its slots
//     over without A's SET (as when asynchronous replication had not sent
//     it yet; on loopback it always has, so A's key is deleted on the
//     replica as it takes over), at once, or only after the ttl
//     (--delayed-restart: a failover delayed past the longest ttl).
//
// Client B then locks the resource while A's validity runs. A restarted
// master of a cluster serves again only about two seconds after it started
// (Redis Cluster's writable delay): a short delayed restart of its own,
// which protects ttls below it. The argument
// (package redlock, "Nodes that are Redis Clusters") predicts a violation
// when the node forgot A's lock inside the ttl, and none otherwise; and
// that the other master's locks on that node stay available throughout.

// clusterMasters is the number of masters of each cluster node.
const clusterMasters = 2

// clusterNodes describes the cluster nodes of a run.
type clusterNodes struct {
	n, masters, replicas int
	persistence          bool
	partitionable        bool // a Gate on each process's bus and data port (redisproc.ClusterConfig.Partitionable)
	promotable           bool // the replicas may promote themselves
}

// clusterNodeTimeout is cluster-node-timeout of the cluster nodes: how
// long a master may be unreachable before the others mark it failed.
const clusterNodeTimeout = time.Second

// startRedisClusters starts the cluster nodes s describes, at once. Their
// replicas never fail over by themselves unless s.promotable.
func startRedisClusters(ctx context.Context, s clusterNodes) ([]*redisproc.Cluster, error) {
	return redisproc.StartClusters(ctx, s.n, redisproc.ClusterConfig{Masters: s.masters, Replicas: s.replicas,
		Server: redisproc.Config{Persistence: s.persistence}, ReplicaNoFailover: !s.promotable, NodeTimeout: clusterNodeTimeout,
		Partitionable: s.partitionable})
}

// slotMaster returns the index of the master that serves resource's lock
// key on cluster node c (the client's hash-tagged key).
func slotMaster(ctx context.Context, c *redisproc.Cluster, resource string) (int, error) {
	key := redlock.HashTaggedKey(redlock.DefaultKeyPrefix, resource)
	slot, err := c.Masters()[0].Client().Do(ctx, "CLUSTER", "KEYSLOT", key).Int()
	if err != nil {
		return 0, fmt.Errorf("torture: CLUSTER KEYSLOT %s: %w", key, err)
	}
	return c.MasterOf(slot), nil
}

// otherResource returns a resource whose key is served by another master
// of c than resource's: the locks that must stay available on the node.
func otherResource(ctx context.Context, c *redisproc.Cluster, resource string) (string, error) {
	mi, err := slotMaster(ctx, c, resource)
	if err != nil {
		return "", err
	}
	for i := 0; i < 100; i++ {
		r := fmt.Sprintf("other%d", i)
		if oi, err := slotMaster(ctx, c, r); err == nil && oi != mi {
			return r, nil
		}
	}
	return "", errors.New("torture: no resource on another master")
}

// thirdPartyValue is the value a third party holds r's key with on the
// nodes where A must not acquire (holdR).
const thirdPartyValue = "torture-third-party"

// holdR has a third party hold r's key on the nodes o, on r's slot master
// of each (masters[i] on node i), so that a client acquires on the other
// nodes only.
func (e *env) holdR(ctx context.Context, masters, o []int) error {
	key := redlock.HashTaggedKey(redlock.DefaultKeyPrefix, "r")
	for _, i := range o {
		if err := e.cl.redis[i].Masters()[masters[i]].Client().Set(ctx, key, thirdPartyValue, 10*e.cfg.TTL).Err(); err != nil {
			return fmt.Errorf("torture: hold r on %s: %w", nodeName(i), err)
		}
	}
	return nil
}

// acquireBesideThirdParty has A acquire r while the third party of holdR
// holds it on the nodes o, so that A acquires on exactly m, and lets the
// third party's keys go at once after.
func (e *env) acquireBesideThirdParty(ctx context.Context, a *actor, masters, m, o []int) (*grant, error) {
	end := e.rec.fault("third-party", names(o), "a third party holds r on these nodes while A acquires, so that A acquires on exactly "+names(m))
	defer end()
	g, err := e.acquireR(ctx, a)
	key := redlock.HashTaggedKey(redlock.DefaultKeyPrefix, "r")
	for _, i := range o {
		if derr := e.cl.redis[i].Masters()[masters[i]].Client().Del(ctx, key).Err(); derr != nil && err == nil {
			err = derr
		}
	}
	return g, err
}

// runClusterLoss is cluster-master-killed and cluster-replica-promoted.
func runClusterLoss(ctx context.Context, e *env) error {
	promote := e.cfg.Scenario == "cluster-replica-promoted"
	rcs := e.cl.redis
	a, b, err := e.twoClients()
	if err != nil {
		return err
	}
	m, o := e.split(a.client.Quorum(), -1)
	victim := m[e.rng.IntN(len(m))]
	masters := make([]int, len(rcs))
	for i, c := range rcs {
		if masters[i], err = slotMaster(ctx, c, "r"); err != nil {
			return err
		}
	}
	vm := rcs[victim].Masters()[masters[victim]]
	// A locks exactly m: on the other nodes a third party holds r's key
	// while A acquires, and lets it go at once after.
	if err := e.holdR(ctx, masters, o); err != nil {
		return err
	}
	g, err := e.acquireBesideThirdParty(ctx, a, masters, m, o)
	if err != nil {
		return fmt.Errorf("torture: A could not acquire on %s: %w", names(m), err)
	}
	a.write(g)
	delay := e.cfg.restartDelay()
	var end func()
	if promote {
		e.log("A holds the lock on %s; killing the master of r's slot on %s and promoting its replica, which missed A's SET, after %v", names(m), nodeName(victim), delay)
		end = e.rec.fault("promote", nodeName(victim), fmt.Sprintf("master of r's slot SIGKILLed; its replica, behind on replication, promoted after %v", delay))
		vm.Kill()
	} else {
		e.log("A holds the lock on %s; killing the master of r's slot on %s (restart after %v, persistence %v)", names(m), nodeName(victim), delay, e.cfg.Persistence)
		end = e.rec.fault("restart", nodeName(victim), fmt.Sprintf("master of r's slot SIGKILLed, restart after %v, persistence %v", delay, e.cfg.Persistence))
		vm.Kill()
	}
	// While the master is lost, the node's other master still serves its
	// locks: B locks a resource there on every node.
	if other, err := otherResource(ctx, rcs[victim], "r"); err == nil {
		// Bounded well under A's validity: this side step must not use up
		// the time in which B's acquisition of r shows the violation.
		octx, cancel := context.WithTimeout(ctx, e.cfg.TTL/5)
		og, err := b.acquireEach(octx, other, e.cfg.TTL, 20*time.Millisecond)
		cancel()
		if err != nil {
			e.log("B could not lock %s on the other master while r's master was lost: %v", other, err)
		} else {
			e.log("B locked %s, served by the other master, while r's master was lost", other)
			_ = b.release(ctx, og)
		}
	}
	return e.afterLoss(ctx, a, b, g, victim, delay, func() error {
		defer end()
		sleep(ctx, delay)
		if !promote {
			if err := vm.Restart(ctx, 0); err != nil {
				return err
			}
			return rcs[victim].WaitOK(ctx)
		}
		// The replica must lack A's SET, as asynchronous replication
		// leaves it when the master dies before sending it; on loopback
		// the SET always arrives in time (and a replica refuses writes),
		// so A's key is deleted on the replica as it takes over, before
		// any client reaches it.
		replica := rcs[victim].Replicas(masters[victim])[0]
		if err := rcs[victim].Promote(ctx, masters[victim]); err != nil {
			return err
		}
		return replica.Client().Del(ctx, redlock.HashTaggedKey(redlock.DefaultKeyPrefix, "r")).Err()
	})
}

// clusterWritableDelay is how long a restarted master of a Redis Cluster
// refuses requests after it started (CLUSTER_WRITABLE_DELAY in Redis).
const clusterWritableDelay = 2 * time.Second
