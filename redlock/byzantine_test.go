package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// liarCluster starts 4 honest redis-servers and a fifth behind a Liar with
// the given rules; it returns the honest servers and the five node URLs.
func liarCluster(t *testing.T, rules ...redlocktest.LieRule) ([]*redlocktest.Server, *redlocktest.Liar, []string) {
	t.Helper()
	cl := redlocktest.Start(t, 5)
	liar := redlocktest.StartLiar(t, cl.Servers[4], rules...)
	urls := append(cl.URLs()[:4], liar.URL())
	return cl.Servers[:4], liar, urls
}

// TestLyingNode is the demonstration of WithByzantineNodes: one node of five
// answers OK to every SET without performing it. For every way of splitting
// the four honest nodes between two clients (the first client's share is
// taken by a third party while it tries, and freed before the second one
// tries), plain majority mode lets both clients hold the lock at once for
// some split, and Byzantine mode with f=1 (quorum 4) for none.
func TestLyingNode(t *testing.T) { // R1.1, B3
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		honest, liar, urls := liarCluster(t)
		tests := []struct {
			name       string
			f          int
			wantDouble bool
		}{
			{"majority mode, f=0", 0, true},
			{"byzantine mode, f=1", 1, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				opts := []redlock.Option{redlock.WithByzantineNodes(tt.f), redlock.WithNodeTimeout(500 * time.Millisecond)}
				ca, cb := dialURLs(t, a, urls, opts...), dialURLs(t, a, urls, opts...)
				ctx := t.Context()
				var doubles []string
				for mask := 0; mask < 1<<len(honest); mask++ {
					res := fmt.Sprintf("%s-split-%02d", strings.Fields(tt.name)[0], mask)
					key := redlock.DefaultKeyPrefix + res
					// A third party holds the nodes outside the first client's share.
					for i, s := range honest {
						if mask&(1<<i) == 0 {
							if err := s.Client().Set(ctx, key, "third-party", 10*time.Second).Err(); err != nil {
								t.Fatal(err)
							}
						}
					}
					la, errA := ca.TryLock(ctx, res)
					for i, s := range honest {
						if mask&(1<<i) == 0 {
							s.Client().Del(ctx, key) // the third party lets go
						}
					}
					lb, errB := cb.TryLock(ctx, res)
					if errA == nil && errB == nil {
						doubles = append(doubles, fmt.Sprintf("first client on honest nodes %04b, second on %04b", mask, ^mask&0xf))
					}
					for _, l := range []*redlock.Lock{la, lb} {
						if l != nil {
							_ = l.Unlock(ctx)
						}
					}
					for _, err := range []error{errA, errB} {
						if err != nil && !errors.Is(err, redlock.ErrNotAcquired) {
							t.Fatalf("split %04b: %v", mask, err)
						}
					}
				}
				switch {
				case tt.wantDouble && len(doubles) == 0:
					t.Fatalf("no split let two clients hold the lock at once; the liar (%d lies) should have allowed it in majority mode", liar.Lies())
				case !tt.wantDouble && len(doubles) > 0:
					t.Fatalf("two clients held the lock at once in %d splits, first: %s", len(doubles), doubles[0])
				}
				t.Logf("%d splits with two holders at once (liar told %d lies)", len(doubles), liar.Lies())
			})
		}
	})
}

// inflateFence lies about the fencing scripts: the fenced acquire (two
// keys, or three with the floor key of the restart repair, and two
// arguments) reports a huge fence value (and a kept floor), and the raise
// (the same keys and three arguments) claims success.
func inflateFence(args []string) (string, bool) {
	cmd := strings.ToUpper(args[0])
	if (cmd != "EVALSHA" && cmd != "EVAL") || len(args) < 5 || (args[2] != "2" && args[2] != "3") || !strings.HasPrefix(args[4], redlock.DefaultFencePrefix) {
		return "", false
	}
	keys := int(args[2][0] - '0')
	switch len(args) - 3 - keys { // the arguments after the keys
	case 2:
		if args[2] == "3" {
			return "*3\r\n:1\r\n$19\r\n9000000000000000000\r\n:1\r\n", true
		}
		return "*2\r\n:1\r\n$19\r\n9000000000000000000\r\n", true
	case 3:
		return ":1\r\n", true
	}
	return "", false
}

// TestLiarCannotInflateTokens: a node that reports a huge fence value
// cannot inflate the tokens of Byzantine fencing with f=1, which takes the
// second largest value of its quorum of four (R18, B3); in plain majority
// mode, once two honest nodes are frozen so that the liar is part of every
// quorum, it can. Tokens keep increasing throughout.
func TestLiarCannotInflateTokens(t *testing.T) { // R18
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		honest, _, urls := liarCluster(t, inflateFence)
		var last uint64
		grants := func(name string, c *redlock.Client, inflated bool) {
			t.Helper()
			for i := range 5 {
				l, err := c.Lock(t.Context(), "r", redlock.WithTries(20))
				if err != nil {
					t.Fatalf("%s: grant %d: %v", name, i, err)
				}
				tok := l.Token()
				_ = l.Unlock(context.WithoutCancel(t.Context()))
				if tok <= last {
					t.Fatalf("%s: token %d after %d", name, tok, last)
				}
				last = tok
				if big := tok > 1<<62; big != inflated {
					t.Fatalf("%s: token %d, inflated = %v, want %v", name, tok, big, inflated)
				}
			}
		}
		grants("byzantine f=1", dialURLs(t, a, urls, redlock.WithFencing(), redlock.WithByzantineNodes(1), redlock.WithNodeTimeout(500*time.Millisecond)), false)
		honest[0].Freeze()
		honest[1].Freeze()
		defer honest[0].Thaw()
		defer honest[1].Thaw()
		grants("majority", dialURLs(t, a, urls, redlock.WithFencing(), redlock.WithNodeTimeout(100*time.Millisecond)), true)
	})
}

func TestByzantineModeRefusesTooFewNodes(t *testing.T) { // B3
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		_, err := a.dial(cl.URLs(), redlock.WithByzantineNodes(1))
		if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "needs at least 3f+1 = 4 nodes, got 3") {
			t.Fatalf("Dial with N=3, f=1 = %v, want ErrInvalid naming 4 and 3", err)
		}
	})
}

// lieOnExtend claims every extension succeeded (the extend script: one key,
// two arguments), whether or not the node holds the value.
func lieOnExtend(args []string) (string, bool) {
	cmd := strings.ToUpper(args[0])
	if (cmd == "EVALSHA" || cmd == "EVAL") && len(args) == 6 && args[2] == "1" {
		return ":1\r\n", true
	}
	return "", false
}

// TestLiarClaimingToHold: a node that claims to hold a value it does not
// (it confirms every extension, and every SET). The lock's keys vanish from
// two of the four honest nodes. In majority mode the liar's confirmation
// completes a quorum of extensions, the holder keeps believing it holds the
// lock, and a second client acquires it too; in Byzantine mode with f=1 the
// next extension fails and Done closes with ErrLost (R17, B3).
func TestLiarClaimingToHold(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		honest, _, urls := liarCluster(t, redlocktest.LieOnSet, lieOnExtend)
		// Extended every 100 ms, a 3 s lock is not lost to a test process
		// not run for a second or two (the test wants a loss found by
		// an extension, or hidden by the liar, not an expiry).
		const ttl = 3 * time.Second
		for _, tt := range []struct {
			name string
			f    int
		}{{"majority", 0}, {"byzantine", 1}} {
			t.Run(tt.name, func(t *testing.T) {
				rec := &recorder{}
				opts := []redlock.Option{redlock.WithByzantineNodes(tt.f), redlock.WithTTL(ttl), redlock.WithNodeTimeout(300 * time.Millisecond)}
				c := dialURLs(t, a, urls, append(opts, redlock.WithObserver(rec))...)
				other := dialURLs(t, a, urls, opts...)
				res := "held-" + tt.name
				l, err := c.Lock(t.Context(), res, redlock.WithAutoExtend(), redlock.WithExtendInterval(100*time.Millisecond), redlock.WithTries(10))
				if err != nil {
					t.Fatal(err)
				}
				defer l.Unlock(context.WithoutCancel(t.Context()))
				redlocktest.Eventually(t, 10*time.Second, func() bool {
					n := 0
					for _, s := range honest {
						n += len(s.MustKeys(redlock.DefaultKeyPrefix + res))
					}
					return n == 4
				}, "keys not set on the four honest nodes")
				if tt.f == 0 {
					// A second client acquires the same lock on the two
					// honest nodes that lost it and the liar. (The holder's
					// next extension restores the key on nodes that forgot
					// it, restore.go; the second client may have to try
					// again right after another loss.)
					var l2 *redlock.Lock
					redlocktest.Eventually(t, 10*time.Second, func() bool {
						for _, s := range honest[:2] {
							s.Client().Del(t.Context(), redlock.DefaultKeyPrefix+res)
						}
						var err error
						l2, err = other.TryLock(t.Context(), res)
						return err == nil
					}, "the second client never acquired the lock; the liar should have let it in")
					// ...and an extension after that still "succeeds":
					// the liar hides the loss.
					before := rec.autoExtensions()
					redlocktest.Eventually(t, 10*time.Second, func() bool { return rec.autoExtensions() > before }, "no extension after the loss")
					if err := l.Err(); err != nil {
						t.Fatalf("Err = %v: majority mode noticed the loss, the liar should have hidden it", err)
					}
					_ = l2.Unlock(t.Context())
					t.Logf("majority mode: holder still believes it holds %q while a second client acquired it", res)
					return
				}
				for _, s := range honest[:2] {
					s.Client().Del(t.Context(), redlock.DefaultKeyPrefix+res)
				}
				waitDone(t, l, 10*time.Second)
				if err := l.Err(); !errors.Is(err, redlock.ErrLost) {
					t.Fatalf("Err = %v, want ErrLost", err)
				}
				if l2, err := other.TryLock(t.Context(), res); err == nil {
					_ = l2.Unlock(t.Context())
					t.Fatal("second client acquired while two honest nodes still hold the first client's keys")
				}
			})
		}
	})
}
