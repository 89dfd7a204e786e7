package main

import (
	"math"
	"testing"
	"time"
)

// analyzeCont over made-up critical sections: three hand-offs across
// processes (100 µs, 500 µs, 300 µs), one within a process (50 µs), and the
// winning attempts of the cross hand-offs split into wake-up (0, 300 µs,
// 150 µs) and round (100 µs, 200 µs, 150 µs).
func TestAnalyzeCont(t *testing.T) {
	us := func(n int64) int64 { return n * 1000 }
	rs := []contChildResult{
		{
			Counts: []int64{2, 1},
			CS: []csRecord{
				{Worker: 0, Grant: us(0), Unlock: us(1000), Unlocked: us(1100)},
				{Worker: 0, Grant: us(2600), Unlock: us(3600), Unlocked: us(3700)},
				{Worker: 1, Grant: us(3650), Unlock: us(4650), Unlocked: us(4750)},
			},
			Attempts: []attemptRecord{
				{At: us(2600), Elapsed: 200 * time.Microsecond, Granted: true},
				{At: us(2000), Elapsed: 200 * time.Microsecond}, // a failed one, out of order
				{At: us(3650), Granted: true, Handed: true},
			},
		},
		{
			Counts: []int64{1},
			Failed: 1,
			CS: []csRecord{
				{Worker: 0, Grant: us(1100), Unlock: us(2100), Unlocked: us(2200)},
				{Worker: 0, Grant: us(4950), Unlock: us(5950), Unlocked: us(6050)},
			},
			Attempts: []attemptRecord{
				{At: us(1100), Elapsed: 100 * time.Microsecond, Granted: true},
				{At: us(4950), Elapsed: 150 * time.Microsecond, Granted: true},
			},
		},
	}
	st := analyzeCont(rs, time.Second)
	if st.PerSec != 4 {
		t.Errorf("PerSec = %v, want 4", st.PerSec)
	}
	if st.ProcFairness != 3 || st.WorkerFairness != 2 || st.Failed != 1 {
		t.Errorf("fairness %v (process) %v (worker), failed %d; want 3, 2, 1", st.ProcFairness, st.WorkerFairness, st.Failed)
	}
	want := map[string]quantiles{
		"cross":   {P50: 300 * time.Microsecond, P99: 500 * time.Microsecond, N: 3},
		"local":   {P50: 50 * time.Microsecond, P99: 50 * time.Microsecond, N: 1},
		"release": {P50: 100 * time.Microsecond, P99: 100 * time.Microsecond, N: 3},
		"wake":    {P50: 150 * time.Microsecond, P99: 300 * time.Microsecond, N: 3},
		"round":   {P50: 150 * time.Microsecond, P99: 200 * time.Microsecond, N: 3},
	}
	got := map[string]quantiles{"cross": st.Cross, "local": st.Local, "release": st.Release, "wake": st.Wake, "round": st.Round}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %+v, want %+v", k, got[k], w)
		}
	}
	// 5 holds of 1 ms, 50 µs within a process, 900 µs across.
	if st.HoldMean != time.Millisecond || math.Abs(st.HoldShare-5000.0/5950) > 1e-9 ||
		math.Abs(st.LocalShare-50.0/5950) > 1e-9 || math.Abs(st.CrossShare-900.0/5950) > 1e-9 {
		t.Errorf("hold mean %v, shares %.4f / %.4f / %.4f; want 1ms, %.4f / %.4f / %.4f", st.HoldMean,
			st.HoldShare, st.LocalShare, st.CrossShare, 5000.0/5950, 50.0/5950, 900.0/5950)
	}
	// The hand-over within the first process is not an attempt.
	if math.Abs(st.Attempts-0.8) > 1e-9 {
		t.Errorf("Attempts = %v, want 0.8 (4 attempts and a hand-over, 5 critical sections)", st.Attempts)
	}
}
