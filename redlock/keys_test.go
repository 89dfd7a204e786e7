package redlock_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// clusterMem is a MemNode that says it is a Redis Cluster
// (adapter.ClusterNode).
type clusterMem struct{ *redlocktest.MemNode }

func (clusterMem) Cluster() bool { return true }

func (clusterMem) Replicas(context.Context) ([]adapter.Replica, error) { return nil, nil }

// A client over a node that is a cluster builds hash-tagged keys, for one
// resource and for a set, reads the names back, and its handles are
// refused by a client without hash tags (and the other way round).
func TestClusterNodeTurnsHashTagsOn(t *testing.T) {
	nodes, mems := redlocktest.NewMemNodes(3)
	nodes[1] = clusterMem{mems[1]}
	c := memClient(t, nodes, redlock.WithFencing())
	ctx := t.Context()
	l, err := c.TryLock(ctx, "a}b")
	if err != nil {
		t.Fatal(err)
	}
	// A fenced TryLock returns once a quorum confirmed: the slowest node
	// may not hold the key yet, so the key is looked for on every node.
	holders := 0
	for _, m := range mems {
		if _, ok, _ := m.Value(ctx, `dlm:lock:{a\]b}`); ok {
			holders++
		}
	}
	if holders < c.Quorum() {
		keys, _ := mems[0].Keys(ctx, "")
		t.Fatalf("hash-tagged lock key on %d nodes, want at least %d; keys of the first %q", holders, c.Quorum(), keys)
	}
	var fence uint64
	for _, m := range mems {
		f, _ := m.Fence(ctx, `dlm:fence:{a\]b}`)
		fence = max(fence, f)
	}
	if fence != l.Token() {
		t.Errorf("fence under the tagged fence key = %d, want the token %d", fence, l.Token())
	}
	s, err := c.TryLockAll(ctx, []string{"y{", "x}"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Resources(); !slices.Equal(got, []string{"x}", "y{"}) {
		t.Errorf("Resources() = %q, want [x} y{]", got)
	}
	plain := memClient(t, []redlock.Node{mems[0], mems[1], mems[2]}, redlock.WithFencing())
	for _, h := range []redlock.Handle{l.Handle(), s.Handle()} {
		if _, err := plain.Resume(ctx, h); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Resume of a hash-tagged handle by a client without hash tags = %v, want ErrInvalid", err)
		}
		if _, err := c.Resume(ctx, h); err != nil {
			t.Errorf("Resume by a client with hash tags: %v", err)
		}
	}
	pl, err := plain.TryLock(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resume(ctx, pl.Handle()); !errors.Is(err, redlock.ErrInvalid) {
		t.Errorf("Resume of a plain handle by a hash-tag client = %v, want ErrInvalid", err)
	}
}
