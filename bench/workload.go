package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// throughput runs g goroutines, each locking and releasing its own key in a
// loop (one attempt, no retry) for d, and returns pairs per second, the
// number of failed pairs and the first failure.
func throughput(ctx context.Context, l locker, run string, g int, d time.Duration) (perSec float64, failed int64, firstErr error) {
	var pairs, fails atomic.Int64
	var errOnce sync.Once
	fail := func(err error) {
		fails.Add(1)
		errOnce.Do(func() { firstErr = err })
	}
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := run + ":" + strconv.Itoa(i)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				release, err := l.tryLock(ctx, key)
				if err != nil {
					fail(err)
					continue
				}
				if err := release(ctx); err != nil {
					fail(fmt.Errorf("release: %w", err))
					continue
				}
				pairs.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(pairs.Load()) / time.Since(start).Seconds(), fails.Load(), firstErr
}

// seqResult is the sequential workload's outcome.
type seqResult struct {
	pairP50, pairP99, acquireP50 time.Duration
	allocsPerPair                float64
	n                            int
}

// sequential locks and releases one key from one goroutine for d, timing
// each acquisition and each pair, and counts the heap allocations of the
// whole process per pair (the library's background goroutines included).
func sequential(ctx context.Context, l locker, key string, d time.Duration) (seqResult, error) {
	for range 20 { // warm up connections and scripts
		release, err := l.tryLock(ctx, key)
		if err != nil {
			return seqResult{}, err
		}
		if err := release(ctx); err != nil {
			return seqResult{}, err
		}
	}
	var pairs, acquires []time.Duration
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		t0 := time.Now()
		release, err := l.tryLock(ctx, key)
		if err != nil {
			return seqResult{}, err
		}
		t1 := time.Now()
		if err := release(ctx); err != nil {
			return seqResult{}, err
		}
		acquires = append(acquires, t1.Sub(t0))
		pairs = append(pairs, time.Since(t0))
	}
	runtime.ReadMemStats(&after)
	n := len(pairs)
	return seqResult{
		pairP50:       quantile(pairs, 0.5),
		pairP99:       quantile(pairs, 0.99),
		acquireP50:    quantile(acquires, 0.5),
		allocsPerPair: float64(after.Mallocs-before.Mallocs) / float64(n),
		n:             n,
	}, nil
}

// warmup is the number of untimed acquisitions before acquireLatency times
// any: a fresh client's first requests open connections and load scripts.
const warmup = 10

// acquireLatency times n single acquisitions from one goroutine, back to
// back, each on its own key (prefix + i) and released in the background, so
// that a release waiting out a frozen node's timeout neither delays the next
// acquisition nor leaves the process idle between them (an idle process
// answers its first request late, which would be measured too). It returns
// the median.
func acquireLatency(ctx context.Context, l locker, prefix string, n int) (time.Duration, error) {
	var ds []time.Duration
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range n + warmup {
		t0 := time.Now()
		release, err := l.tryLock(ctx, prefix+":"+strconv.Itoa(i))
		if err != nil {
			return 0, err
		}
		if i >= warmup {
			ds = append(ds, time.Since(t0))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = release(ctx)
		}()
	}
	return quantile(ds, 0.5), nil
}

// contResult is the contention workload's outcome.
type contResult struct {
	perSec   float64 // critical sections per second
	fairness float64 // busiest worker's count / least busy's (+Inf if one got none)
	failed   int64   // Lock calls that gave up (the library's retries ran out)
}

// contention runs workers goroutines fighting for one key with the
// library's default retry, each holding the lock for hold, for d.
func contention(ctx context.Context, l locker, key string, workers int, hold, d time.Duration) contResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	counts := make([]int64, workers)
	var fails atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				release, err := l.lock(ctx, key)
				if err != nil {
					if ctx.Err() == nil {
						fails.Add(1)
					}
					continue
				}
				time.Sleep(hold) // the critical section
				done := ctx.Err() == nil
				_ = release(context.WithoutCancel(ctx))
				if done {
					counts[i]++
				}
			}
		}()
	}
	wg.Wait()
	elapsed := min(time.Since(start), d)
	var total int64
	for _, c := range counts {
		total += c
	}
	return contResult{
		perSec:   float64(total) / elapsed.Seconds(),
		fairness: fairness(counts),
		failed:   fails.Load(),
	}
}

// fairness is the busiest worker's count over the least busy's.
func fairness(counts []int64) float64 {
	if len(counts) == 0 {
		return 0
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	if lo == 0 {
		if hi == 0 {
			return 0
		}
		return inf
	}
	return float64(hi) / float64(lo)
}

// quantile returns the q-quantile of ds (nearest rank), sorting ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q*float64(len(ds)-1) + 0.5)
	return ds[i]
}
