package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestHandoffNoLostWakeups looks for the whole class of lost wake-ups in
// the hand-off: a waiter asleep on R10's timed delay while the key is
// free, because the release that should have woken it fell between two
// steps of its own (it looked at the queue, then joined it; it failed an
// attempt, then joined; it was handed a lock, then left). The retry delay
// is a minute and every run is over in far less: only a release can wake
// a waiter in time, so any lost wake-up shows as a minute's stall.
//
// A timing adversary drives each run: every node answers each request
// after a random delay and announces each release after another (in order
// per node, as on a real server's two connections, an announcement before
// or after the answer to its release), the hold times are random, and a
// Lock call is held back for a random while just as it is about to look
// for waiters ahead of it (the hook of that window). The workers mix the
// calls that take the hand-off's different paths: Lock and Unlock (a lock
// kept for the next waiter), a lock whose value was read (acquired anew on
// the waiter's behalf), TryLock (never queues), and, within one client,
// Lock calls that give up on a short deadline. Mutual exclusion is checked
// throughout.
//
// Two clients race only with Lock and Unlock over three nodes: their
// attempts cannot split the votes, and a split vote is the one case in
// which R10 means waiters should sleep the delay. DLM_ADVERSARY_SEEDS sets
// how many seeds each case runs (default 40).
func TestHandoffNoLostWakeups(t *testing.T) { // R10, R14
	seeds := 40
	if s := os.Getenv("DLM_ADVERSARY_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("DLM_ADVERSARY_SEEDS=%q: want a positive number", s)
		}
		seeds = n
	}
	cases := []struct {
		name    string
		clients int
		mixed   bool // value reads, TryLock and give-ups besides Lock/Unlock
	}{
		{"one client, every path", 1, true},
		{"two clients", 2, false},
	}
	for _, tc := range cases {
		for seed := range uint64(seeds) {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				adversary(t, tc.clients, tc.mixed, seed)
			})
		}
	}
}

func adversary(t *testing.T, clients int, mixed bool, seed uint64) {
	synctest.Test(t, func(t *testing.T) {
		const (
			workers = 4
			rounds  = 12
			delay   = time.Minute // R10's delay: a stall shows
		)
		nodes, mems := redlocktest.NewMemNodes(3)
		for i, m := range mems {
			m.SetJitter(2*time.Millisecond, seed*31+uint64(i))
		}
		var rmu sync.Mutex
		rng := rand.New(rand.NewPCG(seed, 0xadfe))
		draw := func(max time.Duration) time.Duration {
			rmu.Lock()
			defer rmu.Unlock()
			return time.Duration(rng.Int64N(int64(max) + 1))
		}
		pick := func(n int) int {
			rmu.Lock()
			defer rmu.Unlock()
			return rng.IntN(n)
		}
		// The whole run must end long before one retry delay.
		ctx, cancel := context.WithTimeout(t.Context(), delay/2)
		defer cancel()
		start := time.Now()
		var inside atomic.Int32
		var wg sync.WaitGroup
		for range clients {
			c, err := redlock.New(nodes, redlock.WithTTL(time.Hour), redlock.WithRetryDelay(delay, delay))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Every call of this client's workers runs the hook.
			ctx := redlock.WithTurnHook(ctx, func(string) {
				if pick(2) == 0 {
					time.Sleep(draw(2 * time.Millisecond))
				}
			})
			for w := range workers {
				wg.Go(func() {
					for r := range rounds {
						kind := 0
						if mixed {
							kind = pick(6)
						}
						var l *redlock.Lock
						var err error
						switch kind {
						case 4: // TryLock: never queues
							l, err = c.TryLock(ctx, "adv")
							if errors.Is(err, redlock.ErrNotAcquired) && ctx.Err() == nil {
								continue
							}
						case 5: // gives up on a short deadline
							short, stop := context.WithTimeout(ctx, draw(3*time.Millisecond))
							l, err = c.Lock(short, "adv")
							stop()
							if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
								continue
							}
						default:
							l, err = c.Lock(ctx, "adv")
						}
						if err != nil {
							t.Errorf("worker %d round %d (kind %d) at %v: %v", w, r, kind, time.Since(start), err)
							return
						}
						if n := inside.Add(1); n != 1 {
							t.Errorf("%d holders at once", n)
						}
						if kind == 3 {
							_ = l.Value() // no lock kept for the next waiter: acquired anew
						}
						time.Sleep(draw(time.Millisecond))
						inside.Add(-1)
						if err := l.Unlock(context.WithoutCancel(ctx)); err != nil {
							t.Errorf("worker %d round %d: Unlock: %v", w, r, err)
						}
					}
				})
			}
		}
		wg.Wait()
		if d := time.Since(start); d >= delay/4 {
			t.Errorf("the run took %v: some waiter slept on R10's delay", d)
		}
	})
}
