package election_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A leadership renews for as long as its process and a quorum are alive,
// whatever extension bound the lock options set: an hour (fake time) with
// ttl 1.5s and WithMaxExtensions(3) keeps one term, and Leader reports it
// throughout. Failed before: the leadership ended after 3 extensions
// (about 3s) with ErrMaxExtensions, as dlm elect --max-extensions 3 did.
// It still ends when the leader can no longer extend (its process hung,
// or cut off from the nodes, as here): Done closes within the ttl, and
// another candidate is elected with a higher term.
func TestLeadershipRenewsWithoutBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 1500 * time.Millisecond
		nodes, mems := redlocktest.NewMemNodes(3)
		var cut atomic.Bool
		cutNodes := make([]redlock.Node, len(mems))
		for i, m := range mems {
			cutNodes[i] = cutNode{m, &cut}
		}
		opts := election.WithLockOptions(redlock.WithTTL(ttl), redlock.WithMaxExtensions(3))
		lead := newElection(t, newClient(t, cutNodes, redlock.WithTTL(ttl)), opts)
		reader := newElection(t, newClient(t, nodes, redlock.WithTTL(ttl)))
		a, err := lead.Campaign(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		for range 60 {
			time.Sleep(time.Minute)
			select {
			case <-a.Done():
				t.Fatalf("leadership ended after %v: %v", time.Since(a.Since()), a.Err())
			default:
			}
			mustLeader(t, reader, true, election.Leader{ID: "a", Term: a.Term()})
		}
		cut.Store(true) // a's process can reach no node: no extension
		hung := time.Now()
		<-a.Done()
		if d := time.Since(hung); d > ttl {
			t.Errorf("leadership ended %v after its extensions stopped, want within the ttl %v", d, ttl)
		}
		if !errors.Is(a.Err(), redlock.ErrExpired) && !errors.Is(a.Err(), redlock.ErrLost) {
			t.Errorf("Err = %v, want ErrExpired or ErrLost", a.Err())
		}
		b, err := reader.Campaign(t.Context(), "b")
		if err != nil {
			t.Fatal(err)
		}
		if b.Term() <= a.Term() {
			t.Errorf("term of b %d, want above a's %d", b.Term(), a.Term())
		}
		_ = b.Resign(t.Context())
	})
}
