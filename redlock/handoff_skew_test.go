package redlock_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// The class of TestHandoffFirstRankRetriesAfterARace: a release reaches
// the nodes at different times (a busy node, a slow link), and a waiter
// of another client, woken by the first announcement, attempts while the
// release is still on its way to the others. However late each node
// applies the release, the waiter must take the lock soon after the last
// one did, never after its timed retry (a minute here). A timing
// adversary draws each node's lateness at random, up to many round
// trips, for 3 and 5 nodes (a client listens on 2 of them).
func TestHandoffReleaseSkewNeverStrandsAWaiter(t *testing.T) { // R10, R14
	for _, n := range []int{3, 5} {
		for seed := range uint64(40) {
			t.Run(fmt.Sprintf("nodes=%d/seed=%d", n, seed), func(t *testing.T) {
				releaseSkew(t, n, seed)
			})
		}
	}
}

func releaseSkew(t *testing.T, n int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	lateReleaseRace(t, n, func([]*redlocktest.MemNode) ([]time.Duration, time.Duration) {
		late := make([]time.Duration, n)
		var last time.Duration
		for i := range late {
			late[i] = time.Duration(rng.IntN(100)) * time.Millisecond / 2 // 0 to 50 round trips
			last = max(last, late[i])
		}
		// Within a second of the last node's release.
		return late, last + time.Second
	})
}
