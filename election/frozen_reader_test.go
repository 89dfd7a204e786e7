package election_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
)

// "a" leads over 3 nodes; one node restarts without persistence (it forgot
// the record, which the leader republishes only every ttl/3) and another
// is frozen. A new reader hears two nodes: one holds a's record, one none;
// the frozen one, which holds it too, never answers. Those answers cannot
// rule a leader out: Status reports ErrNoQuorum (dlm leader: exit 69, too
// few nodes answered to tell), not "no leader" with a nil error; and it
// says so within a few node timeouts, not after a grant's patience for the
// node the reader never met.
func TestNewReaderCannotTellWhileANodeHoldingTheRecordIsFrozen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		nodes, mems := floorMemNodes(3)
		_, lead := electA(t, fencedClient(t, nodes, ttl)) // every node holds a's lock and record
		mems[0].Forget()
		mems[2].Freeze()
		defer mems[2].Thaw()
		reader, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		re, err := election.New(reader, "db")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		st, err := re.Status(context.Background())
		took := time.Since(start)
		select {
		case <-lead.Done():
			t.Fatalf("the leadership ended: %v", lead.Err())
		default:
		}
		if !st.OK && !errors.Is(err, election.ErrNoQuorum) {
			t.Errorf("a leads (term %d); m1 restarted empty, m3 frozen: a new reader's Status = %+v, %v: \"no leader\" where the answers cannot tell (want a, or ErrNoQuorum)", lead.Term(), st, err)
		}
		if took > 2*time.Second {
			t.Errorf("a new reader's Status over m3 frozen took %v, want within a few node timeouts", took.Round(time.Millisecond))
		}
	})
}
