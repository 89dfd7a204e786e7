package redlock

import (
	"context"
	"time"
)

// The waits of Lock between attempts (R10). The acquisition loop
// (client.go: acquire) knows them through waiting: the timed random delay
// of R10 (timedWait, below), or the hand-off's queue (handoff_wait.go),
// which shortens it when a release is announced or when this client's
// Unlock hands the lock over.

// waiting is how a Lock call waits for its next attempt (R10). One value
// serves every call of a client; what a call keeps between its waits is
// its turn, passed in and out by value.
type waiting interface {
	// first is the wait before a call's first attempt: none, or, with
	// the hand-off, the call's turn behind its client's calls that wait
	// for the same key (no barging). A TryLock never waits.
	first(ctx context.Context, t target, o lockOptions) (turn, error)
	// mark is taken before each attempt, for the wait after it.
	mark(t target) uint64
	// next is the wait after a failed attempt, which took elapsed and
	// failed as failed says. It returns ctx's error when ctx ends, and
	// ErrClosed when the client closes; the turn it returns is the call's
	// either way.
	next(ctx context.Context, t target, o lockOptions, tn turn, elapsed time.Duration, failed *AcquireError) (turn, error)
	// end ends the call's waiting; acquired tells whether it got the
	// lock.
	end(t target, tn turn, acquired bool)
	// gaveBack is told that the releases of a failed attempt with value
	// (of key, or a set's keys) are all answered (R8.5). ended: the call
	// that made it ended on it, and its releases deleted keys, given back
	// unannounced: the waiters that failed on them may go.
	gaveBack(key string, keys []string, value string, ended bool)
	// close ends what the waiting keeps open; called by Client.Close once
	// the background work is done.
	close()
}

// turn is what a Lock call's waiting keeps between its attempts.
type turn struct {
	// lock is a lock handed over to the call by its client's Unlock: the
	// wait ended with it, and the call returns it.
	lock *Lock
	// mark is the waiting's mark, taken before the latest attempt.
	mark uint64
	// value is the latest attempt's value: a key that holds it after
	// the attempt failed is being given back (R8.5), not held.
	value string
	// place is the call's place among its client's waiters (hand-off),
	// nil until it has one.
	place *waiter
}

// timedWait is the waiting without hand-off: the timed random delay of
// R10 after each failed attempt, and no wait before the first.
type timedWait struct{ c *Client }

func (timedWait) first(context.Context, target, lockOptions) (turn, error) { return turn{}, nil }
func (timedWait) mark(target) uint64                                       { return 0 }
func (timedWait) end(target, turn, bool)                                   {}
func (timedWait) gaveBack(string, []string, string, bool)                  {}
func (timedWait) close()                                                   {}

func (w timedWait) next(ctx context.Context, _ target, o lockOptions, _ turn, _ time.Duration, _ *AcquireError) (turn, error) {
	return turn{}, w.c.sleep(ctx, o)
}

// sleep waits the timed random delay of R10. It returns ctx's error when
// ctx ends, and ErrClosed when the client closes.
func (c *Client) sleep(ctx context.Context, o lockOptions) error {
	t := time.NewTimer(c.retryDelay(o))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stop:
		return ErrClosed
	case <-t.C:
		return nil
	}
}

// retryDelay draws the random delay of R10 from [min, max].
func (c *Client) retryDelay(o lockOptions) time.Duration {
	if o.retryMax <= o.retryMin {
		return o.retryMin
	}
	c.rmu.Lock()
	d := o.retryMin + time.Duration(c.rng.Int64N(int64(o.retryMax-o.retryMin)+1))
	c.rmu.Unlock()
	return d
}

// jitter draws a random delay in [0, max].
func (c *Client) jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	c.rmu.Lock()
	d := time.Duration(c.rng.Int64N(int64(max) + 1))
	c.rmu.Unlock()
	return d
}
