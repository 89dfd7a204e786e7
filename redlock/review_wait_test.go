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

// refusingNode answers every request with an error after a delay, as a
// node that refuses the client's password does on a loaded machine
// (WRONGPASS takes a round trip).
type refusingNode struct {
	name  string
	delay time.Duration
}

var errRefused = errors.New("WRONGPASS invalid username-password pair")

func (n refusingNode) String() string { return n.name }

func (n refusingNode) answer(ctx context.Context) (bool, error) {
	select {
	case <-time.After(n.delay):
		return false, errRefused
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (n refusingNode) Acquire(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
	return n.answer(ctx)
}

func (n refusingNode) Release(ctx context.Context, _, _ string) (bool, error) { return n.answer(ctx) }

func (n refusingNode) Extend(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
	return n.answer(ctx)
}

// A Lock whose context ends while an attempt is under way reports the
// nodes of the last attempt that completed, as its documentation says of
// an AcquireError, not the cut attempt's "no reply" for every node: with
// nodes that all refuse the client (each attempt fails for want of a
// quorum), the error must say that no quorum was possible (ErrNoQuorum),
// which dlm lock --wait turns into exit 69, never "held elsewhere" (75).
//
// Found by review: `dlm lock --wait 2s` against a node whose password was
// wrong exited 75 "held elsewhere, 0 of 1 nodes granted it (1 not waited
// for)" on a loaded machine; `dlm elect` showed the converse (69 for a
// held election) per elect's notes. Before the fix, deadlines that fell
// inside an attempt gave an error without ErrNoQuorum.
func TestLockEndedByContextReportsLastCompleteAttempt(t *testing.T) {
	for _, wait := range []time.Duration{300 * time.Millisecond, 450 * time.Millisecond, 700 * time.Millisecond, 1100 * time.Millisecond, 1500 * time.Millisecond} {
		t.Run(fmt.Sprint(wait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes := []redlock.Node{refusingNode{"n1", 40 * time.Millisecond}, refusingNode{"n2", 40 * time.Millisecond}, refusingNode{"n3", 40 * time.Millisecond}}
				c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithRetryDelay(10*time.Millisecond, 20*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				_, err = c.Lock(ctx, "r")
				var ae *redlock.AcquireError
				if !errors.As(err, &ae) {
					t.Fatalf("Lock = %v, want an AcquireError", err)
				}
				if ae.Attempts < 2 {
					t.Fatalf("%d attempts in %v; the test needs several", ae.Attempts, wait)
				}
				if !errors.Is(err, redlock.ErrNoQuorum) {
					t.Errorf("Lock ended by its context after %d attempts on nodes that all refuse = %v; want ErrNoQuorum (the nodes of the last complete attempt)", ae.Attempts, err)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Lock = %v, want it to wrap the context's error", err)
				}
			})
		})
	}
}
