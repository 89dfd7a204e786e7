package goredis

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/redlocktest"
)

// A read of a cluster node's slot map does not wait for a hung master
// (SIGSTOP: it takes connections and never answers) until its request's
// deadline: it merges the answers of the others. Before, it went through
// go-redis' ForEachShard, which waited for every server it asked, and
// first read go-redis' own map from a server it picked at random (the
// hung one, as often as not, with two masters): a failover was followed
// that much late, and Close waited for it.
func TestSlotMapReadDoesNotWaitForAFrozenMaster(t *testing.T) {
	cl := redlocktest.StartRedisCluster(t, 2, 0)
	// A caller's client, as a user makes one.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	// The requests of a read to the frozen master end at this deadline,
	// far above what a read of the other's answer takes even on a
	// loaded machine.
	const ask = 3 * time.Second
	m := &slotMap{cluster: cc, askFor: ask}
	t.Cleanup(func() {
		m.stop()
		m.wg.Wait()
	})
	m.read()
	frozen := cl.Masters()[0]
	if got := m.servedBy(); len(got) != 2 {
		t.Fatalf("the slot map read with every master healthy names masters %v, want both of %v", got, cl.Addrs())
	}
	frozen.Freeze()
	t.Cleanup(frozen.Thaw)
	m.shards.Store(nil) // so that the read below is seen to set it
	start := time.Now()
	m.read()
	took := time.Since(start)
	t.Logf("read the slot map in %v with a master frozen", took.Round(time.Millisecond))
	if took > ask/2 {
		t.Errorf("a read of the slot map took %v with one master of two frozen, want it not to wait for the frozen master's request (deadline %v)", took.Round(time.Millisecond), ask)
	}
	if got := m.servedBy(); len(got) != 2 {
		t.Errorf("the slot map read with a master frozen names masters %v, want both (the healthy one's view)", got)
	}
}

// servedBy returns the masters that serve slots in m as last read.
func (m *slotMap) servedBy() []string {
	p := m.shards.Load()
	if p == nil {
		return nil
	}
	var out []string
	for _, s := range *p {
		if len(out) == 0 || out[len(out)-1] != s.Master {
			out = append(out, s.Master)
		}
	}
	return out
}
