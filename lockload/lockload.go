// Package lockload generates load on a lock client and measures it: pairs of
// acquire+release per second over distinct keys, sequential latency and
// allocations, acquisition latency, and contention for one key with its
// fairness. `dlm bench` runs it against any nodes, and the bench/ module
// runs it side by side for dlm and other libraries, so both report the same
// figures measured the same way.
package lockload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock"
)

// Locker is one lock client under load, seen through the two operations the
// workloads need. Its methods must be safe for concurrent use.
type Locker interface {
	// TryLock makes one acquisition attempt on key (no retry) and returns
	// the release.
	TryLock(ctx context.Context, key string) (release func(context.Context) error, err error)
	// Lock acquires key with the client's default retry and returns the
	// release.
	Lock(ctx context.Context, key string) (release func(context.Context) error, err error)
}

// Client returns dlm's redlock client as a Locker.
func Client(c *redlock.Client) Locker { return redlockLocker{c} }

type redlockLocker struct{ c *redlock.Client }

func (r redlockLocker) TryLock(ctx context.Context, key string) (func(context.Context) error, error) {
	l, err := r.c.TryLock(ctx, key)
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

func (r redlockLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	l, err := r.c.Lock(ctx, key)
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

// ThroughputResult is the outcome of Throughput.
type ThroughputResult struct {
	// PerSec is acquire+release pairs per second.
	PerSec float64
	// Pairs counts the pairs that completed.
	Pairs int64
	// Failed counts pairs whose acquisition or release failed.
	Failed int64
	// FirstErr is the first failure, nil when none.
	FirstErr error
}

// Throughput runs g goroutines, each locking and releasing its own key
// (prefix + its index) in a loop, one attempt each, for d.
func Throughput(ctx context.Context, l Locker, prefix string, g int, d time.Duration) ThroughputResult {
	var pairs, fails atomic.Int64
	var errOnce sync.Once
	var firstErr error
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
			key := prefix + strconv.Itoa(i)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				release, err := l.TryLock(ctx, key)
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
	return ThroughputResult{PerSec: float64(pairs.Load()) / time.Since(start).Seconds(), Pairs: pairs.Load(), Failed: fails.Load(), FirstErr: firstErr}
}

// SeqResult is the outcome of Sequential.
type SeqResult struct {
	// PairP50 and PairP99 are quantiles of an acquire+release pair.
	PairP50, PairP99 time.Duration
	// AcquireP50 is the median acquisition alone.
	AcquireP50 time.Duration
	// AllocsPerPair counts the whole process's heap allocations per pair
	// (the client's background goroutines included).
	AllocsPerPair float64
	// Pairs is the number of pairs timed.
	Pairs int
}

// ErrNoPair is returned by Sequential when no pair completed within d.
var ErrNoPair = errors.New("lockload: no acquire+release pair completed")

// Sequential locks and releases one key from one goroutine for d, after 20
// untimed pairs that warm up connections and scripts, timing each
// acquisition and each pair. It stops at the first failure.
func Sequential(ctx context.Context, l Locker, key string, d time.Duration) (SeqResult, error) {
	for range 20 {
		release, err := l.TryLock(ctx, key)
		if err != nil {
			return SeqResult{}, err
		}
		if err := release(ctx); err != nil {
			return SeqResult{}, err
		}
	}
	var pairs, acquires []time.Duration
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		t0 := time.Now()
		release, err := l.TryLock(ctx, key)
		if err != nil {
			return SeqResult{}, err
		}
		t1 := time.Now()
		if err := release(ctx); err != nil {
			return SeqResult{}, err
		}
		acquires = append(acquires, t1.Sub(t0))
		pairs = append(pairs, time.Since(t0))
	}
	runtime.ReadMemStats(&after)
	n := len(pairs)
	if n == 0 {
		return SeqResult{}, ErrNoPair
	}
	return SeqResult{
		PairP50:       Quantile(pairs, 0.5),
		PairP99:       Quantile(pairs, 0.99),
		AcquireP50:    Quantile(acquires, 0.5),
		AllocsPerPair: float64(after.Mallocs-before.Mallocs) / float64(n),
		Pairs:         n,
	}, nil
}

// Warmup is the number of untimed acquisitions before AcquireLatency times
// any: a fresh client's first requests open connections and load scripts.
const Warmup = 10

// AcquireLatency times n single acquisitions from one goroutine, back to
// back, each on its own key (prefix + ":" + i) and released in the
// background, so that a release waiting out a frozen node's timeout neither
// delays the next acquisition nor leaves the process idle between them. It
// returns the median.
func AcquireLatency(ctx context.Context, l Locker, prefix string, n int) (time.Duration, error) {
	var ds []time.Duration
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range n + Warmup {
		t0 := time.Now()
		release, err := l.TryLock(ctx, prefix+":"+strconv.Itoa(i))
		if err != nil {
			return 0, err
		}
		if i >= Warmup {
			ds = append(ds, time.Since(t0))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = release(ctx)
		}()
	}
	return Quantile(ds, 0.5), nil
}

// ContResult is the outcome of Contention.
type ContResult struct {
	// PerSec is critical sections per second.
	PerSec float64
	// Fairness is the busiest worker's count over the least busy one's
	// (+Inf when a worker got none).
	Fairness float64
	// Failed counts Lock calls that gave up (the client's retries ran out).
	Failed int64
}

// Contention runs workers goroutines fighting for one key with the client's
// default retry, each holding the lock for hold (time.Sleep), for d.
func Contention(ctx context.Context, l Locker, key string, workers int, hold, d time.Duration) ContResult {
	return ContentionHeld(ctx, l, key, workers, hold, d, time.Sleep)
}

// ContentionHeld is Contention with the critical section run by how(hold):
// time.Sleep (also when how is nil), or HoldBlocking. A Go time.Sleep of 1 ms lasts 1.1 to 1.6 ms
// depending on what else the process does: the runtime rounds the rest of
// a timer's wait up to a whole millisecond each time network I/O wakes it
// (runtime/netpoll_epoll.go), so it charges a lock client for the replies
// it reads during the hold; HoldBlocking does not.
func ContentionHeld(ctx context.Context, l Locker, key string, workers int, hold, d time.Duration, how func(time.Duration)) ContResult {
	if how == nil {
		how = time.Sleep
	}
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
				release, err := l.Lock(ctx, key)
				if err != nil {
					if !ended(ctx, err) {
						fails.Add(1)
					}
					continue
				}
				how(hold) // the critical section
				done := ctx.Err() == nil
				_ = release(context.WithoutCancel(ctx))
				if done {
					counts[i]++
				}
			}
		}()
	}
	wg.Wait()
	var total int64
	for _, c := range counts {
		total += c
	}
	return ContResult{
		PerSec:   float64(total) / min(time.Since(start), d).Seconds(),
		Fairness: Fairness(counts),
		Failed:   fails.Load(),
	}
}

// Fairness is the largest count over the smallest: 1 is perfectly fair,
// +Inf when some got none while others got some, 0 when all got none.
func Fairness(counts []int64) float64 {
	if len(counts) == 0 {
		return 0
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	if lo == 0 {
		if hi == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return float64(hi) / float64(lo)
}

// Quantile returns the q-quantile of ds (nearest rank), sorting ds; zero for
// no samples.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(q*float64(len(ds)-1)+0.5)]
}

// ended reports whether a failed Lock call ended with the run: its context
// is done, or its error says the deadline passed, which a client may see
// a moment before the context's own timer runs (and then every call of the
// worker's loop fails at once until it does).
func ended(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
