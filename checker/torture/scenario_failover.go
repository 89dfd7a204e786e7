package torture

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
)

// cluster-failover-fenced: the failover by hand that docs/operations.md
// prescribes for a cluster node, with fencing tokens. The nodes are Redis
// Clusters with a replica per master (cluster-replica-no-failover yes) and
// AOF with appendfsync always. Client A locks r once everywhere and
// releases it (every node then holds r's fence and floor, replicated), then
// locks exactly a majority m. The master of r's slot dies on every node of
// m; on one of them (the victim) its replica is promoted after the ttl
// plus a quarter, lacking A's SET and A's fence raise (replication is
// asynchronous; on loopback it always delivers, so both are put back on
// the replica as it takes over), while the others stay down. Client B then
// locks r on the victim and the nodes outside m, the only quorum left,
// whose fences all predate A's grant: B's token must still be above A's.
// The argument (redlock/fencing.go, "the restart repair"): the promoted
// replica's replication id is new, so the floor it holds counts as lost,
// and B's token is a repair above the clock. Before the floor carried the
// replication id, B's token equalled A's.
func runClusterFailoverFenced(ctx context.Context, e *env) error {
	rcs := e.cl.redis
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
	fenceKey := redlock.HashTaggedKey(redlock.DefaultFencePrefix, "r")
	if err := e.fenceEverywhere(ctx, a, masters, fenceKey); err != nil {
		return err
	}
	m, o := e.split(a.client.Quorum(), -1)
	victim := m[e.rng.IntN(len(m))]
	vm := rcs[victim].Masters()[masters[victim]]
	before, err := vm.Client().Get(ctx, fenceKey).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("torture: read r's fence on %s: %w", nodeName(victim), err)
	}
	key := redlock.HashTaggedKey(redlock.DefaultKeyPrefix, "r")
	if err := e.holdR(ctx, masters, o); err != nil {
		return err
	}
	g, err := e.acquireBesideThirdParty(ctx, a, masters, m, o)
	if err != nil {
		return fmt.Errorf("torture: A could not acquire on %s: %w", names(m), err)
	}
	a.write(g)
	// The replica has everything but what the test takes back below.
	if err := vm.Client().Do(ctx, "WAIT", 1, 10000).Err(); err != nil {
		return fmt.Errorf("torture: WAIT on %s: %w", nodeName(victim), err)
	}
	delay := e.cfg.restartDelay()
	e.log("A holds the lock on %s with token %d; the master of r's slot dies on each of them; on %s its replica, missing A's SET and fence raise, is promoted by hand after %v", names(m), g.token, nodeName(victim), delay)
	end := e.rec.fault("promote", nodeName(victim), fmt.Sprintf("master of r's slot SIGKILLed (and on %s, kept down); its replica, behind on replication, promoted after %v", names(m), delay))
	for _, i := range m {
		rcs[i].Masters()[masters[i]].Kill()
	}
	// B tries only once the failover is complete: the replica's state at
	// its promotion is what the scenario sets, and a client reaching it
	// in between would read the raise the test then takes back.
	err = func() error {
		defer end()
		sleep(ctx, delay)
		replica := rcs[victim].Replicas(masters[victim])[0]
		if err := rcs[victim].Promote(ctx, masters[victim]); err != nil {
			return err
		}
		rc := replica.Client()
		if err := rc.Del(ctx, key).Err(); err != nil {
			return err
		}
		if before == "" {
			return rc.Del(ctx, fenceKey).Err()
		}
		return rc.Set(ctx, fenceKey, before, 0).Err()
	}()
	if err != nil {
		return fmt.Errorf("torture: failover on %s: %w", nodeName(victim), err)
	}
	bctx, cancel := context.WithTimeout(ctx, 3*e.cfg.TTL)
	gb, err := b.acquireEach(bctx, "r", e.cfg.TTL, 20*time.Millisecond)
	cancel()
	if err != nil {
		// Not a violation, but the run showed nothing: say so.
		return fmt.Errorf("torture: B could not lock r within 3 ttl after the failover (does the client follow it?): %w", err)
	}
	e.log("B holds r with token %d (A's was %d)", gb.token, g.token)
	bWritesAfterA(ctx, a, b, g, gb)
	return nil
}

// fenceEverywhere has a grant r until every node holds r's fence floor
// (the key beside its fence key, docs/fencing.md): a raise that reached a
// node after the grant's release, or never, leaves it without one, and a
// node without a floor would make B's grant a repair for that reason
// alone, hiding what the scenario tests.
func (e *env) fenceEverywhere(ctx context.Context, a *actor, masters []int, fenceKey string) error {
	floorKey := fenceKey + ":floor"
	for range 10 {
		g, err := e.acquireR(ctx, a)
		if err != nil {
			return fmt.Errorf("torture: A's first grant: %w", err)
		}
		// The looks end with the grant's validity too: at load 32 under
		// -race, A's grant (ttl 2 s) had expired when it was released
		// ("A's first release: redlock: lock not held ... validity passed
		// without a successful extension").
		all := false
		for try := 0; try < 50 && time.Now().Before(g.lock.Until()); try++ {
			all = true
			for i, c := range e.cl.redis {
				n, err := c.Masters()[masters[i]].Client().Exists(ctx, floorKey).Result()
				if err != nil {
					return fmt.Errorf("torture: read r's floor on %s: %w", nodeName(i), err)
				}
				all = all && n == 1
			}
			if all {
				break
			}
			sleep(ctx, 10*time.Millisecond)
		}
		// A grant that expired after the last look is gone all the same.
		if err := a.release(ctx, g); err != nil && !errors.Is(err, redlock.ErrNotHeld) {
			return fmt.Errorf("torture: A's first release: %w", err)
		}
		if all {
			e.log("every node holds r's fence and floor (token %d)", g.token)
			return nil
		}
	}
	return errors.New("torture: r's fence floor never reached every node")
}
