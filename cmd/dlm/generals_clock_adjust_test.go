package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/agreed"
	"dlm/byzantine/tcp"
)

// TestGeneralsClockAdjustHasTheRightSign: SM with n = 4 and m = 2 (n <=
// 2m, where clock agreement has no bound, as docs/agreement.md says): two
// traitors, speaking the protocol with their real keys, both propose the
// lowest reading an int64 holds, and every loyal general adopts it. The
// adjustment each loyal general prints must then point back in time
// (regression: agreed minus own reading overflowed, and "adjust_ns"
// read 7426949534853461453, about 235 years ahead, for a clock 349 years
// behind).
func TestGeneralsClockAdjustHasTheRightSign(t *testing.T) {
	const n, m = 4, 2
	dir, cluster := generalsCluster(t, n)
	c, err := tcp.LoadCluster(cluster)
	if err != nil {
		t.Fatal(err)
	}
	rt := time.Second
	t0 := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second).Add(time.Second)
	start := t0.Format(time.RFC3339Nano)
	lowest := agreed.Proposal{Candidate: true, Clock: math.MinInt64, HasClock: true, Heard: []bool{true, true, true, true}}.Encode()
	outs := make([]string, n)
	codes := make([]int, n)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		key := filepath.Join(dir, fmt.Sprintf("g%d.key", i))
		if i >= 2 { // the traitors
			wg.Go(func() {
				priv, err := readGeneralKey(key, false)
				if err != nil {
					t.Error(err)
					return
				}
				cfg := byzantine.DefaultConfig()
				cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.RoundTimeout = byzantine.SM, n, m, rt
				time.Sleep(time.Until(t0.Add(-rt)))
				if _, _, err := tcp.RunInteractiveEpoch(ctx, c.Addr(byzantine.ID(i)), c, byzantine.ID(i), priv, byzantine.InteractiveConfig{Config: cfg}, string(useClock), t0, lowest); err != nil {
					t.Errorf("traitor %d: %v", i, err)
				}
			})
			continue
		}
		wg.Go(func() {
			codes[i], outs[i], _ = runGeneralsCLI(t, "clock", "--cluster", cluster, "--id", strconv.Itoa(i), "--key", key,
				"--start", start, "-n", strconv.Itoa(n), "-m", strconv.Itoa(m), "--algorithm", "sm", "--round-timeout", rt.String(), "--epochs", "1", "--unsafe")
		})
	}
	wg.Wait()
	for i := range 2 {
		var l epochLine
		if err := json.Unmarshal([]byte(strings.TrimSpace(outs[i])), &l); err != nil {
			t.Fatalf("general %d (exit %d): %v: %s", i, codes[i], err, outs[i])
		}
		if len(l.OutOfTime) > 0 || l.Error != "" {
			t.Skipf("general %d: the epoch proves nothing on this machine now: %s", i, outs[i])
		}
		if l.ClockNS != math.MinInt64 {
			t.Fatalf("general %d adopted %d, want the traitors' %d (n <= 2m): %s", i, l.ClockNS, int64(math.MinInt64), outs[i])
		}
		if l.AdjustNS >= 0 {
			t.Errorf("general %d: adjust_ns %d for an agreed clock %d below its reading %d: want it negative", i, l.AdjustNS, l.ClockNS, l.Reading)
		}
	}
}

func TestClockAdjust(t *testing.T) {
	for _, tc := range []struct{ agreed, reading, want int64 }{
		{5, 3, 2},
		{3, 5, -2},
		{0, 0, 0},
		{math.MinInt64, 0, math.MinInt64},
		{math.MinInt64, 1, math.MinInt64},
		{math.MinInt64, math.MaxInt64, math.MinInt64},
		{math.MaxInt64, -1, math.MaxInt64},
		{math.MaxInt64, math.MinInt64, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, 0},
		{-1, math.MaxInt64, math.MinInt64},
	} {
		if got := clockAdjust(tc.agreed, tc.reading); got != tc.want {
			t.Errorf("clockAdjust(%d, %d) = %d, want %d", tc.agreed, tc.reading, got, tc.want)
		}
	}
}
