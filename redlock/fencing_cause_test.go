package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// nopermNode is a fencing node whose fence raise the server refuses, as
// Redis does for a user whose ACL forbids a command the fence script runs.
type nopermNode struct{ m *redlocktest.MemNode }

func (n nopermNode) String() string { return n.m.String() }
func (n nopermNode) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.Acquire(ctx, key, value, ttl)
}
func (n nopermNode) Release(ctx context.Context, key, value string) (bool, error) {
	return n.m.Release(ctx, key, value)
}
func (n nopermNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.Extend(ctx, key, value, ttl)
}
func (n nopermNode) AcquireFenced(ctx context.Context, key, fenceKey, value string, ttl time.Duration) (bool, uint64, error) {
	return n.m.AcquireFenced(ctx, key, fenceKey, value, ttl)
}
func (n nopermNode) RaiseFence(context.Context, string, string, string, uint64, time.Duration) (bool, error) {
	return false, errors.New("NOPERM this user has no permissions to run the 'info' command")
}

// TestFencingPhaseErrorNamesTheNodesErrors: a fencing phase that fails
// because the nodes answer errors says which, so that a refusal by the
// server's ACL reads as such. Regression: the error said only "fencing
// phase: 0 of 3 nodes confirmed the token", without the nodes' errors.
func TestFencingPhaseErrorNamesTheNodesErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, mems := redlocktest.NewMemNodes(3)
		nodes := make([]redlock.Node, len(mems))
		for i, m := range mems {
			nodes[i] = nopermNode{m}
		}
		c, err := redlock.New(nodes, redlock.WithFencing())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.TryLock(t.Context(), "f")
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("TryLock with every fence raise refused = %v, want an error naming the nodes' NOPERM", err)
		}
	})
}
