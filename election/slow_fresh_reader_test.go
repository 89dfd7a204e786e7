package election_test

import (
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
)

// A short-lived reader (dlm leader, a probe, a process that starts and
// asks who leads) is a new client whose only read is its first. Over
// healthy nodes answering 1.2 s late (ttl 10 s), where a leader leads,
// every such reader is told the leader: a new client waits for nodes it
// has never met as for slow ones. In memory, under synctest.
//
// Failed before the new client's patience (7335306^): "a leads over nodes
// answering 1.2 s late, but 5 of 5 new clients' Leader reads did not
// report it; last: election: too few nodes answered to tell the leader of
// election "db": 1 of 3 nodes answered, a quorum needs 2: m2: context
// deadline exceeded / m3: context deadline exceeded".
func TestNewReadersToldTheLeaderOverSlowNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := floorMemNodes(3)
		opts := []redlock.Option{redlock.WithFencing(), redlock.WithTTL(10 * time.Second)}
		_, lead := electA(t, fencedClient(t, nodes, 10*time.Second))
		mems[1].SetSlow(1200 * time.Millisecond)
		mems[2].SetSlow(1200 * time.Millisecond)
		const reads = 5
		fails := 0
		var last error
		for range reads {
			time.Sleep(3 * time.Second) // fake time: the leader extends meanwhile
			select {
			case <-lead.Done():
				t.Fatalf("the leadership ended over healthy slow nodes: %v", lead.Err())
			default:
			}
			fresh, err := redlock.New(nodes, opts...)
			if err != nil {
				t.Fatal(err)
			}
			fe, err := election.New(fresh, "db")
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := fe.Leader(t.Context())
			if err != nil || !ok || got.ID != "a" {
				fails++
				last = err
			}
			fresh.Close()
		}
		if fails > 0 {
			t.Errorf("a leads over nodes answering 1.2 s late, but %d of %d new clients' Leader reads did not report it; last: %v", fails, reads, last)
		}
	})
}
