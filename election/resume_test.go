package election_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// unreadNode is a MemNode whose leader records cannot be read: ReadRecord
// fails at once (fail), or waits until the request's context ends.
type unreadNode struct {
	*redlocktest.MemNode
	fail bool
}

func (u unreadNode) ReadRecord(ctx context.Context, key, recordKey, fenceKey string) (string, bool, uint64, error) {
	if u.fail {
		return "", false, 0, errors.New("record read refused")
	}
	<-ctx.Done()
	return "", false, 0, ctx.Err()
}

// Resume whose record read cannot decide (no quorum of answers, or its
// context ends during the read) returns that error and leaves a genuine
// leadership alone: the leader is still read afterwards, with its term,
// and Resume succeeds once the records can be read. Only a read that
// answers, and names another term, resigns (ErrNotLeader). Failed before:
// Resume returned ErrNotLeader and released the leadership ("Leader =
// {ID: Term:0}, false, <nil>; want {ID:a ...}, true").
func TestResumeUndecidedKeepsLeadership(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail bool
		want error
	}{
		{"no quorum", true, election.ErrNoQuorum},
		{"context ends", false, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				a, err := newElection(t, newClient(t, nodes)).Campaign(t.Context(), "a")
				if err != nil {
					t.Fatal(err)
				}
				reader := newElection(t, newClient(t, nodes))
				unread := make([]redlock.Node, len(mems))
				for i, m := range mems {
					unread[i] = unreadNode{MemNode: m, fail: tc.fail}
				}
				e := newElection(t, newClient(t, unread))
				ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
				_, err = e.Resume(ctx, a.Handle())
				cancel()
				if !errors.Is(err, tc.want) || errors.Is(err, election.ErrNotLeader) {
					t.Errorf("Resume = %v, want an error wrapping %v, not ErrNotLeader", err, tc.want)
				}
				mustLeader(t, reader, true, election.Leader{ID: "a", Term: a.Term()})
				select {
				case <-a.Done():
					t.Fatalf("the leadership ended: %v", a.Err())
				default:
				}
				r, err := reader.Resume(t.Context(), a.Handle())
				if err != nil || r.Term() != a.Term() {
					t.Fatalf("Resume with readable records = %v, %v; want the leadership of term %d", r, err, a.Term())
				}
				_ = r.Resign(t.Context())
			})
		})
	}
}
