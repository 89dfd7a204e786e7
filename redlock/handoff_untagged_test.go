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
)

// A client whose Lock calls carry values of their own (WithValue: no
// client tag, handoff.go: rank) shares a key with clients whose values
// carry their tags. It must get no more than its share (R10, R17).
//
// Finding (skipped): it gets about half of all critical sections (4
// clients x 2 workers, limit 2: [2308 795 801 786], busiest / least busy
// 2.9). Nobody can tell which client released an untagged value, so the
// order of the turns stays as it was after each of its releases and the
// same tagged client ranks first again; the untagged client ranks first
// too, in its own eyes, at every release: its own releases' echoes arrive
// (a MemNode announces before it answers; a node's PUBLISH may reach a
// subscriber before the reply reaches the releaser) before Unlock marks
// the value as its own (ownRelease), so they are taken for another
// client's release of an unknown client and wake its next waiter at rank
// 0, and ownRelease wakes it at once anyway (a WithValue waiter is never
// handed over, so WithHandoffLimit never bounds its runs: runs of 10 in a
// row were seen). A fix needs Unlock to mark its value as its own before
// the release goes out, and to rank the waiters of its own that it cannot
// hand a lock to as after a yield; not done here.
//
// Seen alongside, not asserted: a client with WithFencing or WithTries
// (whose waiters are never handed a lock either) gets a third of the
// others' critical sections ([476 1431 1423 1431]), as its turns are one
// critical section where the others' are WithHandoffLimit+1.
func TestHandoffUntaggedClientTakesItsShare(t *testing.T) { // R10, R17
	t.Skip("finding: a WithValue client gets about half of all turns among tagged clients (see the comment)")
	oneOfAKind(t, nil, func(n int64) []redlock.LockOption {
		return []redlock.LockOption{redlock.WithValue(fmt.Sprintf("caller-value-%012d", n))}
	})
}

func oneOfAKind(t *testing.T, copts []redlock.Option, lopts func(int64) []redlock.LockOption) {
	synctest.Test(t, func(t *testing.T) {
		const clients, workers, limit = 4, 2, 2 // client 0 uses WithValue
		nodes, _ := slowMemNodes(5, 100*time.Microsecond)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		counts := make([]int64, clients)
		var inside, seq atomic.Int64
		var wg sync.WaitGroup
		for i := range clients {
			opts := []redlock.Option{redlock.WithTTL(time.Minute), redlock.WithHandoffLimit(limit)}
			if i == 0 {
				opts = append(opts, copts...)
			}
			c := memClient(t, nodes, opts...)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						var opts []redlock.LockOption
						if i == 0 {
							opts = lopts(seq.Add(1))
						}
						l, err := c.Lock(ctx, "shared", opts...)
						if err != nil {
							return
						}
						if n := inside.Add(1); n != 1 {
							t.Errorf("%d holders at once", n)
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
		t.Logf("critical sections per client (client 0 the odd one): %v", counts)
		if f := lockload.Fairness(counts); f > 2 {
			t.Errorf("critical sections per client %v (client 0 the odd one): busiest / least busy %.2f, want <= 2", counts, f)
		}
	})
}
