package redlock_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A long-lived client over 3 nodes whose m3 froze before the client was
// made (its first contact with m3 came while m3 was frozen), m1 and m2
// healthy: it locks and unlocks for 18 s (every grant decided by m1 and m2,
// never needing m3), then m2 goes down, and every grant needs m3. It must
// behave as a client that met m3 before it froze: its grants' requests to
// m3 went a whole grant's patience unanswered, so m3 is known to answer
// nothing, and the first grant that needs it waits the node timeout's
// bound for it, not a grant's patience (ttl/2 - drift, 4.898 s at ttl
// 10 s) again; the grants after it cost what they cost that client. And
// once m3 thaws, a grant that needs it is made at once.
func TestALongLivedClientTreatsANodeFrozenSinceItsStartAsOneItMet(t *testing.T) {
	const ttl = 10 * time.Second
	// needed runs the client's life and returns how long each of the
	// grants that need m3 took.
	needed := func(t *testing.T, met, thaw bool) []time.Duration {
		nodes, mems := redlocktest.NewMemNodes(3)
		defer mems[2].Thaw()
		if !met {
			mems[2].Freeze()
		}
		c, err := redlock.New(nodes, redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := t.Context()
		for i := range 6 {
			l, err := c.Lock(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Extend(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if i == 0 && met {
				synctest.Wait()
				mems[2].Freeze()
			}
			time.Sleep(3 * time.Second)
		}
		if thaw {
			mems[2].Thaw()
			synctest.Wait()
		}
		mems[1].SetDown(true)
		var took []time.Duration
		for range 6 {
			start := time.Now()
			l, err := c.TryLock(ctx, "r")
			took = append(took, time.Since(start))
			if thaw && err != nil {
				t.Errorf("m3 thawed, m1 healthy, m2 down: TryLock = %v", err)
			}
			if err == nil {
				_ = l.Unlock(ctx)
			}
			time.Sleep(2 * time.Second)
		}
		return took
	}
	for _, thaw := range []bool{false, true} {
		t.Run(map[bool]string{false: "m3 stays frozen", true: "m3 thaws"}[thaw], func(t *testing.T) {
			var want, got []time.Duration
			synctest.Test(t, func(t *testing.T) { want = needed(t, true, thaw) })
			synctest.Test(t, func(t *testing.T) { got = needed(t, false, thaw) })
			// What decides is whether a grant waits a patience (ttl/2 -
			// drift) for m3: the met client's first grant that needs m3
			// waits the bound, and one of the next ttl waits a patience
			// (m3 on probation). The round trip's backoff in between may
			// differ by a doubling from one run to the next.
			patience := ttl/2 - ttl/100
			patient := func(ds []time.Duration) (n int) {
				for _, d := range ds {
					if d >= patience {
						n++
					}
				}
				return n
			}
			if got[0] > time.Second || patient(got) > patient(want) {
				t.Errorf("m3 frozen since the client was made (ttl %v), m2 down after 18 s: the grants that need m3 took %v, want the first within the node timeout's limit (1s) and at most %d waiting a patience (%v), as for a client that met m3 (%v)",
					ttl, fmt.Sprint(got), patient(want), patience, fmt.Sprint(want))
			}
			if thaw {
				for i, d := range got {
					if d > time.Second {
						t.Errorf("m3 thawed: grant %d took %v, want within the node timeout's limit", i+1, d)
					}
				}
			}
		})
	}
}
