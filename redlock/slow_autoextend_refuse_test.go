package redlock_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// An auto-extended lock (dlm lock, every election) over healthy nodes
// slower than its extensions can keep ahead of the lock's end, yet within
// the patience of a grant (ttl/2 - drift): at ttl 10 s, nodes answering
// 3.5-4.8 s late; at ttl 3 s, 1-1.4 s. Either Lock refuses it, saying the
// nodes answer too late for the ttl (a longer ttl), and leaves no key
// behind, or every extension lands with at least AutoExtendLead of the
// validity left: the lead under which dlm lock's guard keeps its margin
// (cmd/dlm: guardMargin), so that the guard never kills the command of a
// lock that is kept. In memory, under synctest.
//
// Failed before (granted; the next extension started at once after a slow
// one and landed with ttl - drift - 2 round trips left): at ttl 10 s,
// "two of three nodes healthy, answering 3.5s late (ttl 10s): 17
// extensions in 6 ttls; one landed with 2.897s of validity left, want at
// least 3.333333333s", 4s: 1.897s, 4.5s: 897ms, 4.7s: 497ms, 4.8s: 297ms
// (dlm lock's guard margin there is 1s); at ttl 3 s, 1s: 967ms, 1.2s:
// 567ms, 1.4s: 167ms.
func TestAutoExtendedLockOverTooSlowNodesIsRefusedOrLandsAheadOfTheGuard(t *testing.T) {
	for _, tc := range []struct {
		ttl   time.Duration
		lates []time.Duration
	}{
		{10 * time.Second, []time.Duration{3500 * time.Millisecond, 4 * time.Second, 4500 * time.Millisecond, 4700 * time.Millisecond, 4800 * time.Millisecond}},
		{3 * time.Second, []time.Duration{time.Second, 1200 * time.Millisecond, 1400 * time.Millisecond}},
	} {
		for _, late := range tc.lates {
			t.Run(fmt.Sprintf("ttl %v late %v", tc.ttl, late), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					nodes, mems := redlocktest.NewMemNodes(3)
					mems[1].SetSlow(late)
					mems[2].SetSlow(late)
					obs := &landings{}
					c, err := redlock.New(nodes, redlock.WithTTL(tc.ttl), redlock.WithObserver(obs))
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					start := time.Now()
					l, err := c.Lock(ctx, "r", redlock.WithAutoExtend())
					cancel()
					if err != nil {
						checkTooSlowForTTL(t, err, late)
						t.Logf("refused after %v: %v", time.Since(start), err)
						c.Close() // waits for the releases on their way
						for _, m := range mems {
							if keys, _ := m.Keys(t.Context(), ""); slices.ContainsFunc(keys, isLockKey) {
								t.Errorf("refused, yet %v holds %q", m, keys)
							}
						}
						return
					}
					obs.keptWithLead(t, l, tc.ttl, fmt.Sprintf("two of three nodes healthy, answering %v late (ttl %v)", late, tc.ttl))
				})
			})
		}
	}
}

// isLockKey reports whether key is a lock's key, not the client's owner
// note (dlm:info:owner:...).
func isLockKey(key string) bool { return !strings.HasPrefix(key, "dlm:info:") }

// The other side of the refusal: a grant slower than the round trip a
// kept lock allows is not refused for its own slowness, which may be the
// new connections' set-up (a new client's first request costs two to
// four round trips), but for its first extension's. Here the nodes answer
// the grant 4 s late (ttl 10 s), then 1 s late: the lock is granted, after
// its first extension, and kept with the lead. In memory, under synctest.
func TestAutoExtendedLockSlowOnlyAtItsGrantIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		nodes, mems := redlocktest.NewMemNodes(3)
		mems[1].SetSlow(4 * time.Second)
		mems[2].SetSlow(4 * time.Second)
		obs := &landings{}
		c, err := redlock.New(nodes, redlock.WithTTL(ttl), redlock.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			time.Sleep(time.Second) // the grant's requests are on their way
			mems[1].SetSlow(time.Second)
			mems[2].SetSlow(time.Second)
		}()
		start := time.Now()
		l, err := c.Lock(t.Context(), "r", redlock.WithAutoExtend())
		if err != nil {
			t.Fatalf("nodes answering the grant 4s late, then 1s late (ttl %v): Lock = %v after %v", ttl, err, time.Since(start))
		}
		if took := time.Since(start); took < 5*time.Second || took > 5100*time.Millisecond {
			t.Errorf("Lock returned after %v, want 5s (the grant and its first extension)", took)
		}
		obs.keptWithLead(t, l, ttl, "nodes answering the grant 4s late, then 1s late")
	})
}

// The class: an auto-extended lock, plain or fenced, over two of three
// healthy nodes answering from a tenth to nearly half of the ttl late, at
// ttls from 1 s to a minute: Lock either refuses it saying a longer ttl is
// needed, or keeps it with every extension landing with AutoExtendLead
// left; and it is granted whenever the nodes answer within a fifth of the
// ttl (a fenced one, two round trips to its grant and its first extension
// confirming, too). In memory, under synctest.
func TestAutoExtendedLockLatencyClass(t *testing.T) {
	for _, ttl := range []time.Duration{time.Second, 3 * time.Second, 10 * time.Second, time.Minute} {
		for _, share := range []float64{0.1, 0.2, 0.3, 0.32, 0.33, 0.35, 0.4, 0.45, 0.48} {
			for _, fenced := range []bool{false, true} {
				late := time.Duration(share * float64(ttl))
				t.Run(fmt.Sprintf("ttl %v late %v fenced %v", ttl, late, fenced), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						nodes, mems := redlocktest.NewMemNodes(3)
						for i, m := range mems {
							nodes[i] = m.WithFloor()
						}
						mems[1].SetSlow(late)
						mems[2].SetSlow(late)
						obs := &landings{}
						opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithObserver(obs)}
						if fenced {
							opts = append(opts, redlock.WithFencing())
						}
						c, err := redlock.New(nodes, opts...)
						if err != nil {
							t.Fatal(err)
						}
						defer c.Close()
						ctx, cancel := context.WithTimeout(t.Context(), 3*ttl)
						l, err := c.Lock(ctx, "r", redlock.WithAutoExtend())
						cancel()
						if err != nil {
							if share <= 0.2 {
								t.Fatalf("nodes answering %v late (ttl %v): Lock = %v; want the lock", late, ttl, err)
							}
							checkTooSlowForTTL(t, err, late)
							return
						}
						obs.start(l)
						select {
						case <-l.Done():
							t.Fatalf("nodes answering %v late (ttl %v): the auto-extended lock ended: %v", late, ttl, l.Err())
						case <-time.After(6 * ttl):
						}
						obs.mu.Lock()
						least, n := obs.least, obs.n
						obs.mu.Unlock()
						if want := redlock.AutoExtendLead(ttl); n < 6 || least < want {
							t.Errorf("nodes answering %v late (ttl %v): %d extensions in 6 ttls; one landed with %v of validity left, want at least %v",
								late, ttl, n, least, want)
						}
						_ = l.Unlock(t.Context())
					})
				})
			}
		}
	}
}
