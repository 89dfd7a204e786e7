package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestAttemptCutAtTheDeadlineIsNotATimeout: an attempt still waiting for
// its nodes when the caller's deadline passes was ended by the caller, not
// by the nodes: its nodes are NoReply, never TimedOut, so the error never
// claims ErrNoQuorum for nodes that were merely slower than the caller's
// deadline (dlm lock --wait would exit 69 "nodes unreachable" for a lock
// held elsewhere). The request deadline (nctx) and the caller's deadline
// fire at the same instant; before the fix, whichever timer ran first
// decided. Seen by review as TestLockSeveralResources failing on a loaded
// machine ("3 of 3 nodes failed or timed out" for a held set, exit 69) and
// by elect as TestElect's exit 69 for a held election.
func TestAttemptCutAtTheDeadlineIsNotATimeout(t *testing.T) {
	for i := range 40 {
		synctest.Test(t, func(t *testing.T) {
			nodes, mems := redlocktest.NewMemNodes(3)
			for _, m := range mems {
				m.SetSlow(200 * time.Millisecond)
			}
			c, err := redlock.New(nodes, redlock.WithNodeTimeout(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(50+i)*time.Millisecond)
			defer cancel()
			_, err = c.TryLock(ctx, "r")
			var ae *redlock.AcquireError
			if !errors.As(err, &ae) {
				t.Fatalf("TryLock = %v, want an AcquireError", err)
			}
			if n := ae.Count(redlock.TimedOut); n > 0 || errors.Is(err, redlock.ErrNoQuorum) {
				t.Errorf("deadline %dms: %d node(s) timed out in an attempt the caller's deadline cut: %v", 50+i, n, err)
			}
		})
	}
}
