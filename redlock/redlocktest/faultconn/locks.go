package faultconn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
)

// Target is one node under test: the adapter's node, whose connections go
// through Injector, and Truth, a client of the same redis-server (or
// Redis Cluster) that no fault touches, from which RunLocks reads what the
// node holds.
type Target struct {
	Node     adapter.Node
	Injector *Injector
	Truth    redis.Cmdable
}

// Workload is a run of RunLocks. The zero value of a field takes its
// default.
type Workload struct {
	// Seed seeds the workers' choices (node, key, request timeout, what
	// follows an acquisition).
	Seed uint64
	// Workers run lock requests concurrently; default 8.
	Workers int
	// Keys per node that the workers contend for; default 3.
	Keys int
	// Rounds bounds the run: one round is an acquisition and the
	// extension and releases that follow it; default 2000.
	Rounds int
	// Budget bounds the run in time, whatever Rounds says; default 8 s.
	Budget time.Duration
	// Timeout is the longest context deadline of one request; each
	// request draws its own in [Timeout/4, Timeout]; default 100 ms.
	Timeout time.Duration
	// TTL of the keys; default 30 s, far longer than a run's checks take.
	TTL time.Duration
	// Prefix starts every key; default "wire:".
	Prefix string
}

func (w *Workload) defaults() {
	if w.Workers <= 0 {
		w.Workers = 8
	}
	if w.Keys <= 0 {
		w.Keys = 3
	}
	if w.Rounds <= 0 {
		w.Rounds = 2000
	}
	if w.Budget <= 0 {
		w.Budget = 8 * time.Second
	}
	if w.Timeout <= 0 {
		w.Timeout = 100 * time.Millisecond
	}
	if w.TTL <= 0 {
		w.TTL = 30 * time.Second
	}
	if w.Prefix == "" {
		w.Prefix = "wire:"
	}
}

// Result is what RunLocks saw.
type Result struct {
	// Rounds run, and requests sent (acquisitions, extensions, releases).
	Rounds, Requests int64
	// Acquired counts the acquisitions answered "acquired"; Errors the
	// requests answered with an error (a fault, a deadline).
	Acquired, Errors int64
	// Violations are the answers the node's state contradicts, each with
	// the request and what the node held. Empty in a correct adapter.
	Violations []string
	// Orphans are the rounds whose acquisition, answered with an error,
	// ran on the node after the round's release was answered, and keys
	// found at the end holding the value of a round that was over (one
	// the client released, not one the test cleaned up through Truth): a
	// request of the round ran after a later one, which only a request
	// left behind on a replaced connection can do. Such keys expire with
	// their ttl; a client that reuses a value across attempts could lose
	// a key it counted to such a late request.
	Orphans []string
}

// RunLocks drives concurrent lock requests through targets (Acquire,
// then maybe Extend, then Release, each value used by one round only, on a
// few keys per node) and checks each answer against the node's state right
// after it:
//   - "acquired" only when the node holds the round's value, and "not
//     acquired" only when it does not;
//   - "extended" only when the node holds the value, "not extended" only
//     when it does not;
//   - "released" only when the node no longer holds the value and the
//     round's value could have been there (never after a "not acquired"),
//     "not released" only when it does not hold it;
//   - a value whose acquisition was answered "not acquired" never shows up
//     on the node, then or later.
//
// An answer with an error decides nothing; a round whose release never got
// a definite answer deletes its value through Truth. It returns when
// Rounds ran or Budget passed, and every request has been answered; then
// it reads every key once more for Orphans.
func RunLocks(ctx context.Context, w Workload, targets []Target) Result {
	w.defaults()
	r := &run{w: w, targets: targets, refused: map[string]bool{}, done: map[string]bool{}, cleaned: map[string]bool{}}
	end := time.Now().Add(w.Budget)
	var wg sync.WaitGroup
	for i := range w.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(w.Seed, uint64(i)+1))
			for seq := 0; ctx.Err() == nil && time.Now().Before(end) && r.rounds.Add(1) <= int64(w.Rounds); seq++ {
				r.round(ctx, rnd, "w"+strconv.Itoa(i)+"-"+strconv.Itoa(seq))
			}
		}()
	}
	wg.Wait()
	res := Result{
		Rounds:   min(r.rounds.Load(), int64(w.Rounds)),
		Requests: r.requests.Load(),
		Acquired: r.acquired.Load(),
		Errors:   r.errors.Load(),
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Violations = r.violations
	res.Orphans = r.late
	for ti, t := range targets {
		for k := range w.Keys {
			key := w.Prefix + strconv.Itoa(k)
			v, err := t.Truth.Get(ctx, key).Result()
			if err != nil {
				continue
			}
			switch {
			case r.refused[v]:
				res.Violations = append(res.Violations, fmt.Sprintf("node %d: key %s holds %s, whose acquisition was answered not acquired", ti, key, v))
			case r.done[v] && !r.cleaned[v]:
				res.Orphans = append(res.Orphans, fmt.Sprintf("node %d: key %s holds %s after its round released it", ti, key, v))
			}
		}
	}
	return res
}

// run is the state of one RunLocks.
type run struct {
	w        Workload
	targets  []Target
	rounds   atomic.Int64
	requests atomic.Int64
	acquired atomic.Int64
	errors   atomic.Int64

	mu         sync.Mutex
	violations []string
	late       []string        // acquisitions that ran after their round's release
	refused    map[string]bool // values whose acquisition was answered not acquired
	done       map[string]bool // values released or cleaned for good
	cleaned    map[string]bool // values of done whose cleaning went through Truth
}

func (r *run) violate(format string, args ...any) {
	r.mu.Lock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// held reads whether the node of t holds value under key, through Truth.
func (r *run) held(ctx context.Context, t Target, key, value string) (bool, error) {
	v, err := t.Truth.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return v == value, err
}

// call runs one request with a deadline drawn from rnd and counts it.
func (r *run) call(ctx context.Context, rnd *rand.Rand, do func(context.Context) (bool, error)) (bool, error) {
	d := r.w.Timeout/4 + time.Duration(rnd.Int64N(int64(r.w.Timeout-r.w.Timeout/4)+1))
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	r.requests.Add(1)
	ok, err := do(rctx)
	if err != nil {
		r.errors.Add(1)
	}
	return ok, err
}

// round is one value's life on one key of one node.
func (r *run) round(ctx context.Context, rnd *rand.Rand, value string) {
	ti := rnd.IntN(len(r.targets))
	t := r.targets[ti]
	key := r.w.Prefix + strconv.Itoa(rnd.IntN(r.w.Keys))
	where := fmt.Sprintf("node %d, key %s, value %s", ti, key, value)
	check := func(what string, answer bool) (bool, bool) {
		h, err := r.held(ctx, t, key, value)
		if err != nil {
			if ctx.Err() == nil {
				r.violate("%s: reading the node's truth after %s: %v", where, what, err)
			}
			return false, false
		}
		if h != answer {
			r.violate("%s: %s answered %v, the node holds the value: %v", where, what, answer, h)
		}
		return h, true
	}
	acquire := func(c context.Context) (bool, error) { return t.Node.Acquire(c, key, value, r.w.TTL) }
	release := func(c context.Context) (bool, error) { return t.Node.Release(c, key, value) }
	ok, err := r.call(ctx, rnd, acquire)
	retried := false
	if err != nil && rnd.IntN(2) == 0 {
		// Attempt 2 with the same value, as WithValue retries: attempt
		// 1's release first. Attempt 1 may have set the key, so a "not
		// acquired" of attempt 2 proves nothing.
		_, _ = r.call(ctx, rnd, release)
		ok, err = r.call(ctx, rnd, acquire)
		retried = true
	}
	acquired := err == nil && ok
	mayHold := true
	switch {
	case acquired:
		r.acquired.Add(1)
		check("acquire", true)
	case err == nil && !retried:
		check("acquire", false)
		mayHold = false
		r.mu.Lock()
		r.refused[value] = true
		r.mu.Unlock()
	}
	if acquired && retried {
		// Hold the lock a while: a late release of attempt 1 would
		// delete the key under it.
		time.Sleep(time.Duration(rnd.Int64N(int64(2 * r.w.Timeout))))
	}
	if acquired && rnd.IntN(2) == 0 {
		ok, err := r.call(ctx, rnd, func(c context.Context) (bool, error) { return t.Node.Extend(c, key, value, r.w.TTL) })
		if err == nil {
			check("extend", ok)
			if !ok {
				r.violate("%s: extend answered not held for a key the round acquired and never released", where)
			}
		}
	}
	// known: the acquisition had a definite answer, so it ran before it
	// was answered, before the release was sent.
	known := err == nil
	for try := range 3 {
		ok, err := r.call(ctx, rnd, release)
		first := try == 0 // a failed release before may have run
		if err != nil {
			continue
		}
		if ok && !mayHold {
			r.violate("%s: release answered released after the acquisition answered not acquired", where)
		}
		if !ok && acquired && first {
			r.violate("%s: release answered not held for a key the round acquired and never released", where)
		}
		// Released or not, the node must not hold the value now.
		h, err := r.held(ctx, t, key, value)
		if err != nil {
			break
		}
		if !h {
			r.finish(value)
			return
		}
		if known {
			r.violate("%s: release answered %v, the node still holds the value", where, ok)
		} else {
			// The acquisition that failed with an error ran after the
			// release: left behind on a replaced connection.
			r.mu.Lock()
			r.late = append(r.late, where)
			r.mu.Unlock()
		}
		break
	}
	// No definite answer: delete the value through the node's truth. The
	// truth's connection is not ordered with the faulted client's: an
	// acquisition of this round still held back on a connection the
	// client has not replaced yet (DelayWrite) may run after this delete,
	// as it would after a real client's releases that all failed (the key
	// then lives out its ttl, R8.5). So a value cleaned up here and found
	// again at the end is no orphan: no request of the client ran after a
	// later one of its own.
	const del = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`
	if err := t.Truth.Eval(ctx, del, []string{key}, value).Err(); err != nil && ctx.Err() == nil {
		r.violate("%s: cleaning up: %v", where, err)
		return
	}
	r.mu.Lock()
	r.cleaned[value] = true
	r.mu.Unlock()
	r.finish(value)
}

// finish marks value's round over: the value must not reappear.
func (r *run) finish(value string) {
	r.mu.Lock()
	r.done[value] = true
	r.mu.Unlock()
}
