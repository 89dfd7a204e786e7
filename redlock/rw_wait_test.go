package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
)

// refusingRWNode is refusingNode with read-write locks: every request is
// refused after the delay.
type refusingRWNode struct{ refusingNode }

func (n refusingRWNode) RAcquire(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
	return n.answer(ctx)
}
func (n refusingRWNode) RRelease(ctx context.Context, _, _ string) (bool, error) {
	return n.answer(ctx)
}
func (n refusingRWNode) RExtend(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
	return n.answer(ctx)
}
func (n refusingRWNode) WAcquire(ctx context.Context, _, _, _ string, _ time.Duration) (bool, error) {
	return n.answer(ctx)
}
func (n refusingRWNode) WUnwait(ctx context.Context, _, _ string) (bool, error) { return n.answer(ctx) }
func (n refusingRWNode) WMark(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
	return n.answer(ctx)
}
func (n refusingRWNode) WAcquireFenced(ctx context.Context, _, _, _, _ string, _ time.Duration) (bool, uint64, error) {
	ok, err := n.answer(ctx)
	return ok, 0, err
}

// RLock and WLock ended by their context report the last complete
// attempt, as Lock does (TestLockEndedByContextReportsLastCompleteAttempt):
// an attempt the context cut says nothing of the nodes it did not hear
// from. Before, the read-write loop returned the cut attempt, whose nodes
// were all "no reply", and so not ErrNoQuorum from nodes that all refuse
// (dlm lock --read --wait then said "held elsewhere", exit 75, not 69).
func TestRWLockEndedByContextReportsLastCompleteAttempt(t *testing.T) {
	for _, mode := range []string{"read", "write"} {
		for _, wait := range []time.Duration{300 * time.Millisecond, 450 * time.Millisecond, 700 * time.Millisecond} {
			t.Run(fmt.Sprint(mode, "/", wait), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					nodes := []redlock.Node{
						refusingRWNode{refusingNode{"n1", 40 * time.Millisecond}},
						refusingRWNode{refusingNode{"n2", 40 * time.Millisecond}},
						refusingRWNode{refusingNode{"n3", 40 * time.Millisecond}},
					}
					c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithRetryDelay(10*time.Millisecond, 20*time.Millisecond))
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					ctx, cancel := context.WithTimeout(context.Background(), wait)
					defer cancel()
					if mode == "read" {
						_, err = c.RLock(ctx, "r")
					} else {
						_, err = c.WLock(ctx, "r")
					}
					var ae *redlock.AcquireError
					if !errors.As(err, &ae) {
						t.Fatalf("%sLock = %v, want an AcquireError", mode, err)
					}
					if ae.Attempts < 2 {
						t.Fatalf("%d attempts in %v; the test needs several", ae.Attempts, wait)
					}
					if !errors.Is(err, redlock.ErrNoQuorum) || !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("%s lock ended by its context after %d attempts on nodes that all refuse = %v; want ErrNoQuorum and the context's error", mode, ae.Attempts, err)
					}
				})
			})
		}
	}
}
