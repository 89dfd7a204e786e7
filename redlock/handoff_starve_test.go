package redlock_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestHandoffNoClientStarves checks that with clients that each pass one
// key among their own workers (the hand-off's ranks across clients,
// handoff.go: rank; wait.go: rankSlot), every client gets turns and no
// client waits much longer than a round of the others' turns: the longest
// any client goes without a critical section is bounded by a few rounds of
// clients x (limit+1) critical sections. By default it runs the corners of
// clients 2..10, workers 1..4, limits 1..16; DLM_STARVE_SWEEP=1 runs the
// whole grid (measured in the report of a final review).
func TestHandoffNoClientStarves(t *testing.T) { // R10, R17
	type cfg struct{ clients, workers, limit int }
	grid := []cfg{{2, 1, 1}, {2, 4, 16}, {10, 1, 1}, {10, 4, 16}, {5, 2, 4}, {3, 4, 1}, {10, 1, 16}}
	if os.Getenv("DLM_STARVE_SWEEP") != "" {
		grid = nil
		for clients := 2; clients <= 10; clients++ {
			for _, workers := range []int{1, 2, 3, 4} {
				for _, limit := range []int{1, 2, 4, 16} {
					grid = append(grid, cfg{clients, workers, limit})
				}
			}
		}
	}
	for _, g := range grid {
		t.Run(fmt.Sprintf("%d clients x %d workers limit %d", g.clients, g.workers, g.limit), func(t *testing.T) {
			starve(t, g.clients, g.workers, g.limit)
		})
	}
}

func starve(t *testing.T, clients, workers, limit int) {
	synctest.Test(t, func(t *testing.T) {
		const cs = time.Millisecond // the critical section
		nodes, mems := redlocktest.NewMemNodes(5)
		for _, m := range mems {
			m.SetSlow(100 * time.Microsecond)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		var mu sync.Mutex
		counts := make([]int, clients)
		lastAt := make([]time.Time, clients) // each client's last grant
		longest := make([]time.Duration, clients)
		var wg sync.WaitGroup
		for i := range clients {
			lastAt[i] = start
			c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithHandoffLimit(limit))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for range workers {
				wg.Go(func() {
					for ctx.Err() == nil {
						l, err := c.Lock(ctx, "shared")
						if err != nil {
							return
						}
						now := time.Now()
						mu.Lock()
						counts[i]++
						longest[i] = max(longest[i], now.Sub(lastAt[i]))
						lastAt[i] = now
						mu.Unlock()
						time.Sleep(cs)
						_ = l.Unlock(context.WithoutCancel(ctx))
					}
				})
			}
		}
		wg.Wait()
		end := time.Now()
		total := 0
		for i := range clients {
			total += counts[i]
			longest[i] = max(longest[i], end.Sub(lastAt[i]))
		}
		worst := 0
		for i := range clients {
			if longest[i] > longest[worst] {
				worst = i
			}
		}
		// One round: every other client's turn of up to limit+1
		// critical sections, each about cs plus a hand-over or an
		// attempt; allow four rounds.
		round := time.Duration(clients) * time.Duration(limit+1) * (cs + 2*time.Millisecond)
		t.Logf("per client %v (total %d); longest without a turn %v (client %d), round %v", counts, total, longest[worst], worst, round)
		for i, n := range counts {
			if n == 0 {
				t.Errorf("client %d never got a turn in 3 s: %v", i, counts)
			}
		}
		if longest[worst] > 4*round && longest[worst] > 100*time.Millisecond {
			t.Errorf("client %d went %v without a turn, want at most 4 rounds (%v)", worst, longest[worst], 4*round)
		}
	})
}
