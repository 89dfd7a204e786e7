package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// plainNode is a node with none of the optional capabilities.
type plainNode struct{ redlock.Node }

// Bad input to LockAll and TryLockAll is refused with ErrInvalid and a
// message naming what is wrong, before any node is contacted.
func TestLockAllBadInput(t *testing.T) {
	tests := []struct {
		name      string
		resources []string
		plain     bool // one node lacks adapter.MultiNode
		want      string
	}{
		{"nil list", nil, false, "no resources"},
		{"empty list", []string{}, false, "no resources"},
		{"empty name", []string{"a", "", "c"}, false, "resource 2 of 3 is an empty name"},
		{"duplicate", []string{"b", "a", "b"}, false, `resource "b" is listed twice`},
		{"node without MultiNode", []string{"a", "b"}, true, `node "node[2]" (position 2) does not implement adapter.MultiNode`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, mems := redlocktest.NewMemNodes(3)
			if tt.plain {
				nodes[2] = plainNode{mems[2]}
			}
			c := memClient(t, nodes)
			for _, call := range []struct {
				name string
				f    func(context.Context, []string, ...redlock.LockOption) (*redlock.Lock, error)
			}{{"LockAll", c.LockAll}, {"TryLockAll", c.TryLockAll}} {
				l, err := call.f(t.Context(), tt.resources)
				if l != nil || !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("%s(%q) = %v, %v; want ErrInvalid saying %q", call.name, tt.resources, l, err, tt.want)
				}
			}
			for _, m := range mems {
				if n := m.Applied(); n != 0 {
					t.Fatalf("%s applied %d requests; want none", m, n)
				}
			}
		})
	}
	t.Run("one resource is Lock", func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		nodes[1] = plainNode{mems[1]} // a single key needs no MultiNode
		c := memClient(t, nodes)
		l, err := c.TryLockAll(t.Context(), []string{"solo"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(context.Background())
		if got := l.Resources(); !slices.Equal(got, []string{"solo"}) || l.Resource() != "solo" {
			t.Fatalf("Resources() = %q, Resource() = %q; want [solo], solo", got, l.Resource())
		}
	})
}

// Clients locking overlapping sets from many goroutines never hold a
// resource twice at once, and all of them get through (no deadlock: an
// attempt never holds part of a set while it waits for the rest), on
// MemNodes with slow answers under fake time. Lock of one resource takes
// part too: sets and single locks exclude each other.
func TestLockAllOverlappingSetsExclude(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		for i, m := range mems {
			m.SetSlow(time.Duration(i+1) * 100 * time.Microsecond)
		}
		clients := []*redlock.Client{memClient(t, nodes), memClient(t, nodes), memClient(t, nodes)}
		sets := [][]string{{"a", "b"}, {"c", "b"}, {"a", "c"}, {"a", "b", "c"}, {"a"}, {"d", "a"}, {"c", "d"}}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // fake time
		defer cancel()
		contend(t, ctx, clients, sets, 12, 20, time.Millisecond)
		for _, c := range clients {
			_ = c.Close()
		}
		for _, m := range mems {
			if keys, _ := m.Keys(context.Background(), redlock.DefaultKeyPrefix); len(keys) > 0 {
				t.Fatalf("%s still holds %q after every lock was released", m, keys)
			}
		}
	})
}

// A failed attempt on a set leaves no key of the set on any node (R8.5):
// the nodes where the whole set was set release it, and the key held by
// another client is untouched.
func TestTryLockAllLeavesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes)
		// b is held on three nodes: the set can be set on two only.
		memOccupy(t, mems[:3], redlock.DefaultKeyPrefix+"b", time.Minute)
		l, err := c.TryLockAll(t.Context(), []string{"c", "b", "a"})
		var ae *redlock.AcquireError
		if l != nil || !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &ae) {
			t.Fatalf("TryLockAll = %v, %v; want ErrNotAcquired", l, err)
		}
		if ae.Resource != "a,b,c" {
			t.Fatalf("AcquireError.Resource = %q, want a,b,c", ae.Resource)
		}
		acquired := 0
		for _, r := range ae.Nodes {
			if r.Outcome == redlock.Acquired {
				acquired++
			}
		}
		if acquired != 2 {
			t.Fatalf("nodes that set the whole set = %d, want 2 (%v)", acquired, ae.Nodes)
		}
		for _, r := range []string{"a", "c"} {
			if n := memKeyNodes(mems, redlock.DefaultKeyPrefix+r); n != 0 {
				t.Fatalf("%s is left on %d nodes after the failed attempt", r, n)
			}
		}
		if n := memHolders(mems, redlock.DefaultKeyPrefix+"b", "another-client"); n != 3 {
			t.Fatalf("the other client's b is on %d nodes, want 3", n)
		}
		if n := memKeyNodes(mems, redlock.DefaultKeyPrefix+"b"); n != 3 {
			t.Fatalf("b is on %d nodes, want the other client's 3", n)
		}
	})
}

// A set is extended as one (R17): Extend resets every key's ttl; once a
// quorum of nodes lost one key of the set, Extend says ErrNotHeld and
// extends none of the keys there, auto-extension ends the lock with
// ErrLost, and Unlock (ErrNotHeld) leaves no key of the set behind.
func TestLockAllExtendAndPartialLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes)
		const ttl = 3 * time.Second
		ka, kb := redlock.DefaultKeyPrefix+"a", redlock.DefaultKeyPrefix+"b"
		l, err := c.LockAll(t.Context(), []string{"b", "a"}, redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Resources(); !slices.Equal(got, []string{"a", "b"}) || l.Resource() != "a,b" {
			t.Fatalf("Resources() = %q, Resource() = %q; want [a b], a,b", got, l.Resource())
		}
		synctest.Wait() // the grant needs a quorum; the other nodes answer after it
		if n, m := memHolders(mems, ka, l.Value()), memHolders(mems, kb, l.Value()); n != 5 || m != 5 {
			t.Fatalf("a held on %d nodes, b on %d; want 5 and 5", n, m)
		}
		time.Sleep(2 * time.Second)
		before := l.Until()
		if err := l.Extend(t.Context()); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if !l.Until().After(before) {
			t.Fatalf("Until did not move: %v, was %v", l.Until(), before)
		}
		for _, m := range mems {
			for _, k := range []string{ka, kb} {
				if d, _, _ := m.TTL(context.Background(), k); d != ttl {
					t.Fatalf("TTL of %s on %s after Extend = %v, want %v", k, m, d, ttl)
				}
			}
		}
		// a is lost on three nodes: the set is not held there.
		for _, m := range mems[:3] {
			if ok, err := m.Release(context.Background(), ka, l.Value()); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		time.Sleep(time.Second)
		if err := l.Extend(t.Context()); !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("Extend after a partial loss on a quorum = %v, want ErrNotHeld", err)
		}
		for _, m := range mems[:3] {
			if d, _, _ := m.TTL(context.Background(), kb); d != ttl-time.Second {
				t.Fatalf("TTL of b on %s = %v, want %v: a refused ExtendAll extends no key", m, d, ttl-time.Second)
			}
		}
		if err := l.Unlock(t.Context()); !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("Unlock after a partial loss = %v, want ErrNotHeld", err)
		}
		for _, k := range []string{ka, kb} {
			if n := memKeyNodes(mems, k); n != 0 {
				t.Fatalf("%s left on %d nodes after Unlock", k, n)
			}
		}

		// Auto-extension notices the loss of one key of the set.
		l, err = c.LockAll(t.Context(), []string{"a", "b"}, redlock.WithTTL(ttl), redlock.WithAutoExtend())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for _, m := range mems[2:] {
			_, _ = m.Release(context.Background(), kb, l.Value())
		}
		<-l.Done()
		if !errors.Is(l.Err(), redlock.ErrLost) || time.Since(start) != time.Second {
			t.Fatalf("Err() = %v after %v; want ErrLost at the next extension (1s)", l.Err(), time.Since(start))
		}
		_ = l.Unlock(context.Background())
	})
}

// One fencing token for a set (R18): above the token of every earlier grant
// of any of its resources, whether by a set or by a lock on one resource,
// and every fence of the set is raised to it on a quorum.
func TestLockAllFencingTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes, redlock.WithFencing())
		steps := [][]string{{"a", "b"}, {"b"}, {"b", "c"}, {"a", "c"}, {"a"}, {"c", "d", "a"}}
		last := map[string]uint64{}
		for _, set := range steps {
			l, err := c.LockAll(t.Context(), set)
			if err != nil {
				t.Fatalf("LockAll(%q): %v", set, err)
			}
			tok := l.Token()
			for _, r := range set {
				if tok <= last[r] {
					t.Fatalf("token of %q = %d, not above %d, the last token of %s", set, tok, last[r], r)
				}
				last[r] = tok
				raised := 0
				for _, m := range mems {
					f, err := m.Fence(context.Background(), redlock.DefaultFencePrefix+r)
					if err != nil || f > tok {
						t.Fatalf("fence of %s on %s = %d, %v; want at most %d", r, m, f, err, tok)
					}
					if f == tok {
						raised++
					}
				}
				if raised < c.Quorum() {
					t.Fatalf("fence of %s raised to %d on %d nodes, want a quorum (%d)", r, tok, raised, c.Quorum())
				}
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// The hand-off never breaks a set (R14): Unlock of a set releases it and
// wakes a waiter for one of its resources, which gets that resource alone;
// Unlock of one resource hands it over only to a waiter for that resource,
// and a waiting set is woken at once to acquire its whole set.
func TestLockAllHandoff(t *testing.T) {
	const slow = 10 * time.Second // the timed retry, which the wake-ups must beat
	key := func(r string) string { return redlock.DefaultKeyPrefix + r }
	t.Run("set released, single waiter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			nodes, mems := redlocktest.NewMemNodes(5)
			c := memClient(t, nodes, redlock.WithRetryDelay(slow, slow))
			set, err := c.LockAll(t.Context(), []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *redlock.Lock, 1)
			go func() {
				l, err := c.Lock(t.Context(), "a")
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			synctest.Wait() // the waiter failed once and is queued
			start := time.Now()
			if err := set.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			l := <-got
			if time.Since(start) >= slow {
				t.Fatalf("the waiter got a after %v: not woken by the set's release", time.Since(start))
			}
			synctest.Wait() // the grant needs a quorum; the other nodes answer after it
			if n := memHolders(mems, key("a"), l.Value()); n < 3 {
				t.Fatalf("a holds the waiter's value on %d nodes, want a quorum of 5", n)
			}
			if n := memKeyNodes(mems, key("b")); n != 0 {
				t.Fatalf("b is on %d nodes after the set's release, want none", n)
			}
			_ = l.Unlock(context.Background())
		})
	})
	t.Run("single released, set and single waiters", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			nodes, mems := redlocktest.NewMemNodes(5)
			c := memClient(t, nodes, redlock.WithRetryDelay(slow, slow))
			a, err := c.Lock(t.Context(), "a")
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				l   *redlock.Lock
				err error
			}
			setGot, oneGot := make(chan result, 1), make(chan result, 1)
			go func() {
				l, err := c.LockAll(t.Context(), []string{"a", "b"})
				setGot <- result{l, err}
			}()
			synctest.Wait()
			go func() {
				l, err := c.Lock(t.Context(), "a")
				oneGot <- result{l, err}
			}()
			synctest.Wait() // both wait: the single one in a's queue
			if err := a.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			// The single waiter is handed a: the set, woken too, finds a
			// held and waits on; it never holds b without a.
			one := <-oneGot
			if one.err != nil {
				t.Fatal(one.err)
			}
			synctest.Wait()
			if n := memKeyNodes(mems, key("b")); n != 0 {
				t.Fatalf("b is on %d nodes while a is handed to the single waiter, want none", n)
			}
			start := time.Now()
			if err := one.l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			set := <-setGot
			if set.err != nil {
				t.Fatal(set.err)
			}
			if time.Since(start) >= slow {
				t.Fatalf("the set got in %v after the release of a: not woken", time.Since(start))
			}
			if got := set.l.Resources(); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("the set waiter got %q, want [a b]", got)
			}
			synctest.Wait() // the grant needs a quorum; the other nodes answer after it
			for _, r := range []string{"a", "b"} {
				// A quorum at least: the release of a may still be on its
				// way to the nodes the set's attempt reached first.
				if n := memHolders(mems, key(r), set.l.Value()); n < 3 {
					t.Fatalf("%s holds the set's value on %d nodes, want a quorum of 5", r, n)
				}
			}
			_ = set.l.Unlock(context.Background())
		})
	})
}

// Over real redis-servers, through each adapter: clients locking
// overlapping sets (and single resources) from many goroutines never hold
// a resource twice at once and all get through; a failed TryLockAll leaves
// no key of its set on any server.
func TestLockAllRedis(t *testing.T) { // R1.1, R8.5, R13
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		opts := []redlock.Option{redlock.WithTTL(2 * time.Second), redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond)}
		cl, c1 := cluster(t, a, 3, opts...)
		c2 := dial(t, a, cl, opts...)
		sets := [][]string{{"a", "b"}, {"b", "c"}, {"c", "a"}, {"a"}, {"a", "b", "c"}}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		contend(t, ctx, []*redlock.Client{c1, c2}, sets, 6, 10, 0)
		// Unlock returns at a quorum: the contenders' last releases may
		// still be on their way to one server. Wait for them, so that a
		// key found below is the failed TryLockAll's (a final attempt
		// waits for every node's answer and release).
		for _, r := range []string{"a", "b", "c"} {
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				return keysEverywhere(cl, redlock.DefaultKeyPrefix+r) == 0
			}, "%s still on a server after every contender unlocked", r)
		}

		held, err := c2.TryLock(t.Context(), "b")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Unlock(context.Background())
		if l, err := c1.TryLockAll(t.Context(), []string{"a", "b", "c"}); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLockAll over a held resource = %v, %v; want ErrNotAcquired", l, err)
		}
		for _, r := range []string{"a", "c"} {
			if n := keysEverywhere(cl, redlock.DefaultKeyPrefix+r); n != 0 {
				t.Fatalf("%s left on %d servers after a failed TryLockAll", r, n)
			}
		}
		l, err := c1.TryLockAll(t.Context(), []string{"c", "a"}, redlock.WithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(t.Context()); err != nil {
			t.Fatalf("Extend of a set: %v", err)
		}
		if err := l.Unlock(t.Context()); err != nil {
			t.Fatalf("Unlock of a set: %v", err)
		}
		redlocktest.Eventually(t, 2*time.Second, func() bool {
			return keysEverywhere(cl, redlock.DefaultKeyPrefix+"a")+keysEverywhere(cl, redlock.DefaultKeyPrefix+"c") == 0
		}, "the set's keys released on every server")

		fc := dial(t, a, cl, redlock.WithFencing())
		var last uint64
		for _, set := range [][]string{{"f1", "f2"}, {"f2"}, {"f2", "f3"}} {
			l, err := fc.LockAll(t.Context(), set)
			if err != nil {
				t.Fatalf("fenced LockAll(%q): %v", set, err)
			}
			if l.Token() <= last {
				t.Fatalf("token of %q = %d, not above the last token of f2, %d", set, l.Token(), last)
			}
			last = l.Token()
			_ = l.Unlock(context.Background())
		}
	})
}

// contend runs workers goroutines, each acquiring each times a set of sets
// in turn through one of clients (Lock for a set of one, else LockAll),
// holding it for hold, then releasing it; it fails t if a resource was held
// by two workers at once or a call failed.
func contend(t *testing.T, ctx context.Context, clients []*redlock.Client, sets [][]string, workers, each int, hold time.Duration) {
	t.Helper()
	var mu sync.Mutex
	holder := map[string]int{}
	var violations []string
	// take records w as the holder of set's resources (on), or clears them.
	take := func(w int, set []string, on bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range set {
			if !on {
				delete(holder, r)
				continue
			}
			if h, held := holder[r]; held {
				violations = append(violations, fmt.Sprintf("worker %d got %q while worker %d held %q", w, set, h, r))
			}
			holder[r] = w
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			c := clients[w%len(clients)]
			for i := range each {
				set := sets[(w+i)%len(sets)]
				var l *redlock.Lock
				var err error
				if len(set) == 1 {
					l, err = c.Lock(ctx, set[0], redlock.WithTTL(5*time.Second))
				} else {
					l, err = c.LockAll(ctx, set, redlock.WithTTL(5*time.Second))
				}
				if err != nil {
					errs <- fmt.Errorf("worker %d, round %d, %q: %w", w, i, set, err)
					return
				}
				take(w, set, true)
				time.Sleep(hold)
				take(w, set, false)
				if err := l.Unlock(context.Background()); err != nil {
					errs <- fmt.Errorf("worker %d: Unlock %q: %w", w, set, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(violations) > 0 {
		t.Fatalf("%d violations of mutual exclusion, first: %s", len(violations), violations[0])
	}
}

// DoAll runs fn under the set, auto-extended, cancels fn's context the
// moment the set is lost (one key gone on a quorum), and releases the set.
func TestDoAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c := memClient(t, nodes)
		if err := c.DoAll(t.Context(), []string{"a", "b"}, nil); !errors.Is(err, redlock.ErrInvalid) {
			t.Fatalf("DoAll with a nil function = %v, want ErrInvalid", err)
		}
		ran := false
		err := c.DoAll(t.Context(), []string{"b", "a"}, func(ctx context.Context) error {
			ran = true
			if _, err := c.TryLockAll(ctx, []string{"b", "c"}); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Errorf("TryLockAll over b inside DoAll = %v, want ErrNotAcquired", err)
			}
			time.Sleep(20 * time.Second) // auto-extension keeps the set past its ttl
			return nil
		}, redlock.WithTTL(3*time.Second))
		if err != nil || !ran {
			t.Fatalf("DoAll = %v (ran %v), want nil", err, ran)
		}
		if n := memKeyNodes(mems, redlock.DefaultKeyPrefix+"a") + memKeyNodes(mems, redlock.DefaultKeyPrefix+"b"); n != 0 {
			t.Fatalf("%d keys of the set left after DoAll", n)
		}

		err = c.DoAll(t.Context(), []string{"a", "b"}, func(ctx context.Context) error {
			for _, m := range mems[:3] { // a is taken there: the set is lost
				_ = m.Put(context.Background(), redlock.DefaultKeyPrefix+"a", "intruder")
			}
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), redlock.ErrLost) {
				t.Errorf("fn's context cause = %v, want ErrLost", context.Cause(ctx))
			}
			return ctx.Err()
		}, redlock.WithTTL(3*time.Second))
		if !errors.Is(err, redlock.ErrLost) {
			t.Fatalf("DoAll after the set was lost = %v, want ErrLost", err)
		}
	})
}
