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

// lateDeadline is a context whose deadline has passed before its Err says
// so: what a context.WithDeadline is on a loaded machine, between its
// deadline and the run of the timer that cancels it.
type lateDeadline struct {
	context.Context
	at time.Time
}

func (c lateDeadline) Deadline() (time.Time, bool) { return c.at, true }

// An attempt cut by its caller's deadline reports the nodes that had not
// answered as NoReply, never as timed out, even when its own timer saw
// the deadline before the context's did. dlm lock --wait and dlm elect
// --wait read "every node timed out" as "nodes unreachable" and exited 69
// instead of 75 under load (TestElect, seen once); before the fix this
// test saw 3 nodes TimedOut and ErrNoQuorum.
func TestDeadlineOfTheCallerIsNotATimedOutNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mems {
			m.Freeze()
		}
		ctx := lateDeadline{Context: t.Context(), at: time.Now().Add(300 * time.Millisecond)}
		_, err = c.TryLock(ctx, "r")
		var ae *redlock.AcquireError
		if !errors.As(err, &ae) {
			t.Fatalf("TryLock: %v, want an *AcquireError", err)
		}
		if n := ae.Count(redlock.TimedOut); n != 0 || errors.Is(err, redlock.ErrNoQuorum) {
			t.Errorf("TryLock cut by its caller's deadline: %d nodes timed out, ErrNoQuorum %v; want every node NoReply: %v",
				n, errors.Is(err, redlock.ErrNoQuorum), err)
		}
		for _, m := range mems {
			m.Thaw()
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
