package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/lockload"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Clients that each pass one key among their own workers share it fairly:
// after WithHandoffLimit passes in a row the release is announced to every
// client's waiters alike (R17's bound applied to hand-overs), and the
// client that yields has no head start over the others. Its head waiter
// joined the queue without an attempt of its own; it used to retry at once
// on the announcement, while the other clients' head waiters, which had
// made an attempt, waited their jitter: the yielding client won again and
// again (8 processes x 4 workers on 5 redis-server nodes: runs of 40
// critical sections in one process with a limit of 16, one process never
// served in 3 s).
func TestHandoffYieldGivesNoHeadStart(t *testing.T) { // R10, R17
	synctest.Test(t, func(t *testing.T) {
		const clients, workers, limit = 4, 3, 4
		nodes, mems := redlocktest.NewMemNodes(5)
		for _, m := range mems {
			m.SetSlow(100 * time.Microsecond)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		counts := make([]int64, clients)
		var inside atomic.Int64
		var last, turns atomic.Int64
		last.Store(-1)
		var wg sync.WaitGroup
		errs := make(chan error, clients*workers)
		for i := range clients {
			c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithHandoffLimit(limit))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						l, err := c.Lock(ctx, "shared")
						if err != nil {
							return
						}
						if n := inside.Add(1); n != 1 {
							errs <- fmt.Errorf("%d holders at once", n)
						}
						if last.Swap(int64(i)) != int64(i) {
							turns.Add(1)
						}
						atomic.AddInt64(&counts[i], 1)
						time.Sleep(time.Millisecond) // the critical section
						inside.Add(-1)
						_ = l.Unlock(context.WithoutCancel(ctx))
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		var total int64
		for _, n := range counts {
			total += n
		}
		if f := lockload.Fairness(counts); f > 2 {
			t.Errorf("critical sections per client %v: busiest / least busy %.2f, want <= 2", counts, f)
		}
		// With no head start, a turn is the limit's passes plus the
		// acquisition that starts it, give or take a split vote.
		if perTurn := float64(total) / float64(turns.Load()); perTurn > 3*(limit+1) {
			t.Errorf("%d critical sections in %d turns: %.1f in a row in one client, want about %d", total, turns.Load(), perTurn, limit+1)
		}
		t.Logf("per client %v, %d turns", counts, turns.Load())
	})
}
