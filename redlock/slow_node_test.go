package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A healthy node that answers every request slower than the node timeout's
// limit (a tenth of the ttl with the defaults), but soon enough to leave
// most of the validity, is waited for when the quorum needs it: one node
// of three is down, so every acquisition needs the slow one.
func TestSlowNodeNeededForQuorumIsWaitedFor(t *testing.T) {
	for _, slow := range []time.Duration{900 * time.Millisecond, 1200 * time.Millisecond, 2 * time.Second} {
		t.Run(slow.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				c, err := redlock.New(nodes) // every default: ttl 10s, node timeout 50ms
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				mems[0].SetDown(true)
				mems[2].SetSlow(slow)
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				l, err := c.Lock(ctx, "r")
				if err != nil {
					t.Fatalf("node m3 answers every request in %v (ttl 10s), m1 is down: Lock for a minute = %v; want the lock", slow, err)
				}
				defer func() { _ = l.Unlock(t.Context()) }()
				ttl := redlock.DefaultTTL
				if got, most := l.Validity(), ttl-slow-drift(ttl); got > most || got <= 0 {
					t.Errorf("validity %v, want in (0, %v]: ttl - the slow answer - drift", got, most)
				}
			})
		})
	}
}

// The same node ends no auto-extended lock (a leadership is one): taken
// while every node was fast, the lock is kept once one node is down and
// the quorum needs the other, which turned slow.
func TestSlowNodeKeepsAutoExtendedLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		c, err := redlock.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		l, err := c.Lock(t.Context(), "r", redlock.WithAutoExtend())
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the requests still on their way after the quorum land first
		mems[0].SetDown(true)
		mems[2].SetSlow(1200 * time.Millisecond)
		select {
		case <-l.Done():
			t.Errorf("the auto-extended lock ended (%v) while m3 answered every extension in 1.2s (ttl 10s) and m2 at once", l.Err())
		case <-time.After(time.Minute):
		}
		_ = l.Unlock(t.Context())
	})
}

// The class: a node the quorum needs answers every request after a
// latency from nothing to well past half the ttl. A lock is acquired (a
// fenced one too: two phases, each waiting for the node on its own) and
// released with the release confirmed, and an auto-extended lock kept
// (whether it was taken while the node was slow or before), whenever the
// answers leave the validity the client waits for (the latency under
// ttl/2 - drift, and for a fenced lock under (ttl - drift)/3, which leaves
// one more round trip at the grant: docs/design.md; for a lock kept by
// auto-extension also under (ttl - drift - AutoExtendLead)/2, so that its
// extensions land with the lead left); beyond that a Lock fails, naming
// the slow node as timed out, or the first extension's round trip, and
// the ttl as too short for it, and a kept lock ends at its validity.
// Every granted validity is honest (at most ttl - latency - drift, twice
// the latency for a fenced lock, when Lock returns; an auto-extended lock
// whose grant took longer than that round trip is returned after its
// first extension, with that one's) and holds one more round trip; an
// extension of an auto-extended lock lands with AutoExtendLead left.
func TestSlowNodeLatencyClass(t *testing.T) {
	const ttl = 10 * time.Second
	lead := redlock.AutoExtendLead(ttl)
	for _, share := range []float64{0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.5, 0.7} {
		slow := time.Duration(share * float64(ttl))
		for _, mode := range []string{"lock", "fenced lock", "auto-extended", "fenced auto-extended", "slowed after the grant"} {
			t.Run(fmt.Sprintf("%v/%s", share, mode), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					nodes, mems := redlocktest.NewMemNodes(3)
					copts := []redlock.Option{redlock.WithTTL(ttl)}
					fenced := mode == "fenced lock" || mode == "fenced auto-extended"
					auto := mode == "auto-extended" || mode == "fenced auto-extended" || mode == "slowed after the grant"
					phases := time.Duration(1)
					// The grant's patience for the slow node (timeout.go),
					// ttl/2 - drift; a fenced lock's raise waits half the
					// validity left. A node slowed after the grant is
					// waited for by the extensions, up to ttl - drift each:
					// it keeps the lock while an extension leaves the next
					// one's validity.
					waited := slow < ttl/2-drift(ttl)
					if fenced {
						copts = append(copts, redlock.WithFencing())
						phases = 2
						waited = 3*slow < ttl-drift(ttl)
					}
					// A lock kept by auto-extension is granted only over
					// nodes whose round trip lets its extensions land with
					// the lead left (life.go: keepable); a grant that took
					// longer returns after its first extension.
					keep := (ttl - drift(ttl) - lead) / 2
					confirmed := false
					if auto && mode != "slowed after the grant" {
						waited = waited && slow <= keep
						confirmed = phases*slow > keep
					}
					c, err := redlock.New(nodes, copts...)
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					var opts []redlock.LockOption
					if auto {
						opts = append(opts, redlock.WithAutoExtend(), redlock.WithMaxExtensions(1_000_000))
					}
					if mode != "slowed after the grant" && !waited {
						// Two attempts, so that Lock ends at its last
						// attempt, not at ctx's minute: that could end an
						// attempt while it waited for m3 (its answer then
						// is the caller's end, not a timeout; 5 runs in
						// 100 with the random retry delays).
						opts = append(opts, redlock.WithTries(2))
					}
					if mode != "slowed after the grant" {
						mems[0].SetDown(true)
						mems[2].SetSlow(slow)
					}
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					l, err := c.Lock(ctx, "r", opts...)
					if mode != "slowed after the grant" && !waited {
						var ae *redlock.AcquireError
						switch {
						case !errors.Is(err, redlock.ErrNotAcquired):
							t.Errorf("m3 answers in %v, over the grant's patience: Lock = %v; want ErrNotAcquired", slow, err)
						case !errors.As(err, &ae) || ae.TTL != ttl || ae.Patience <= 0 || ae.Patience > slow:
							t.Errorf("m3 answers in %v, over the grant's patience: Lock = %v; want the patience it was waited for, under %v, with the ttl", slow, err, slow)
						case ae.RoundTrip == 0 && ae.Nodes[2].Outcome != redlock.TimedOut:
							t.Errorf("m3 answers in %v, over the grant's patience: Lock = %v; want m3 timed out", slow, err)
						case ae.RoundTrip != 0 && (!auto || ae.RoundTrip < slow):
							t.Errorf("m3 answers in %v: Lock = %v; want the first extension's round trip only for an auto-extended lock, at least %v", slow, err, slow)
						}
						if err == nil {
							_ = l.Unlock(t.Context())
						}
						return
					}
					if err != nil {
						t.Fatalf("m3 answers in %v (ttl %v): Lock = %v; want the lock", slow, ttl, err)
					}
					if mode != "slowed after the grant" {
						most := ttl - phases*slow - drift(ttl)
						if confirmed {
							most = ttl - slow - drift(ttl) // the first extension's
						}
						if got, least := l.Validity(), slow; got > most || got < least {
							t.Errorf("validity %v, want in [%v, %v]: one more round trip, at most ttl - the slow answers - drift", got, least, most)
						}
					}
					if !auto {
						// The release waits for the slow node too.
						if err := l.Unlock(context.Background()); err != nil {
							t.Errorf("m3 answers in %v (ttl %v): Unlock = %v; want it confirmed", slow, ttl, err)
						}
						return
					}
					defer func() { _ = l.Unlock(t.Context()) }()
					if mode == "slowed after the grant" {
						mems[0].SetDown(true)
						mems[2].SetSlow(slow)
					}
					// The least validity left, read every 100ms for a
					// minute: an extension lands with the lead left.
					least, end := ttl, time.Now().Add(time.Minute)
					tick := time.NewTicker(100 * time.Millisecond)
					defer tick.Stop()
				watch:
					for time.Now().Before(end) {
						select {
						case <-l.Done():
							break watch
						case <-tick.C:
							least = min(least, time.Until(l.Until()))
						}
					}
					select {
					case <-l.Done():
						if waited {
							t.Errorf("m3 answers in %v (ttl %v): the auto-extended lock ended (%v); want it kept", slow, ttl, l.Err())
						} else if !errors.Is(l.Err(), redlock.ErrExpired) {
							t.Errorf("m3 answers in %v (ttl %v): the lock ended with %v; want ErrExpired", slow, ttl, l.Err())
						}
					default:
						if !waited {
							t.Errorf("m3 answers in %v, over ttl/2 - drift: the lock is still held after a minute", slow)
						}
						if want := lead; mode != "slowed after the grant" && least < want-100*time.Millisecond {
							t.Errorf("m3 answers in %v (ttl %v): an extension of the lock granted over it landed with %v of validity left; want %v", slow, ttl, least, want)
						}
					}
				})
			})
		}
	}
}

// What waiting for slow nodes costs when the node is not slow but frozen:
// with the quorum needing it, at most one attempt per ttl waits past the
// limit (on probation, up to ttl/2 - drift), and the others end at the
// limit as before.
func TestFrozenNodeNeededForQuorumCostsOnePatiencePerTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		limit, patience := ttl/10, ttl/2-drift(ttl)
		var seen elapsedAttempts
		nodes, mems := redlocktest.NewMemNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(ttl), redlock.WithObserver(&seen))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		mems[0].SetDown(true)
		mems[2].Freeze()
		defer mems[2].Thaw()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := c.Lock(ctx, "r"); err == nil {
			t.Fatal("Lock granted with m1 down and m3 frozen")
		}
		long := 0
		for _, d := range seen.elapsed() {
			switch {
			case d > patience:
				t.Errorf("an attempt took %v, over the patience %v", d, patience)
			case d > limit:
				long++
			}
		}
		if most := int(time.Minute / ttl); long == 0 || long > most {
			t.Errorf("%d of %d attempts in a minute waited past the limit %v for the frozen node; want 1 to %d (one per ttl at most)", long, len(seen.elapsed()), limit, most)
		}
	})
}

// elapsedAttempts is an Observer that records how long every acquisition
// attempt took.
type elapsedAttempts struct {
	mu   sync.Mutex
	took []time.Duration
}

func (a *elapsedAttempts) Attempt(e redlock.AttemptEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.took = append(a.took, e.Elapsed)
}
func (a *elapsedAttempts) Extension(redlock.ExtensionEvent) {}
func (a *elapsedAttempts) End(redlock.EndEvent)             {}

func (a *elapsedAttempts) elapsed() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Duration(nil), a.took...)
}

// Healthy slow nodes confirm an Unlock: two of three nodes answer every
// request 1.5 s late (ttl 10 s), each applying it at once. Before, a
// release waited for them no longer than the release timeout (1 s), and
// Unlock reported "redlock: release not confirmed by a quorum / m2:
// context deadline exceeded / m3: context deadline exceeded" although
// every node had released.
func TestSlowHealthyNodesConfirmUnlock(t *testing.T) {
	for _, slow := range []time.Duration{1500 * time.Millisecond, 3 * time.Second, 4800 * time.Millisecond} {
		t.Run(slow.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				mems[1].SetSlow(slow)
				mems[2].SetSlow(slow)
				l, err := c.Lock(t.Context(), "r")
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Unlock(context.Background()); err != nil {
					synctest.Wait()
					held := 0
					for _, m := range mems {
						if _, ok, _ := m.Value(context.Background(), "dlm:lock:r"); ok {
							held++
						}
					}
					t.Errorf("two of three nodes healthy but answering in %v (ttl 10s): Unlock = %v; %d nodes hold the key after it", slow, err, held)
				}
			})
		})
	}
}

// Healthy slow nodes grant a fenced lock: two of three nodes answer every
// request 3 s late (ttl 10 s), within a fenced grant's patience (ttl/2 -
// drift, and for the raise half the validity left, which leaves one more
// round trip at the grant). Each phase of a fenced grant waits for them
// on its own, and the validity is still counted from the first phase's
// T1. Before, the patience (ttl/2 - drift)
// was counted from T1 for both phases: "fencing=true ... Lock for 2
// minutes = redlock: lock "r" not acquired (context deadline exceeded
// after 31 attempt(s)): m2 timed out, m3 timed out", where the plain Lock
// was granted after 4 s.
func TestSlowHealthyNodesGrantFencedLock(t *testing.T) {
	const ttl = 10 * time.Second
	for _, fencing := range []bool{false, true} {
		t.Run(fmt.Sprintf("fencing=%v", fencing), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				opts := []redlock.Option{redlock.WithTTL(ttl)}
				phases := time.Duration(1)
				if fencing {
					opts = append(opts, redlock.WithFencing())
					phases = 2
				}
				c, err := redlock.New(nodes, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				const slow = 3 * time.Second
				mems[1].SetSlow(slow)
				mems[2].SetSlow(slow)
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				l, err := c.Lock(ctx, "r")
				if err != nil {
					t.Fatalf("fencing=%v, two of three nodes healthy but answering in %v (ttl %v): Lock for 2 minutes = %v", fencing, slow, ttl, err)
				}
				if got, most := l.Validity(), ttl-phases*slow-drift(ttl); got > most || got <= 0 {
					t.Errorf("fencing=%v: validity %v, want in (0, %v]: counted from the first phase's T1", fencing, got, most)
				}
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("fencing=%v: Unlock = %v", fencing, err)
				}
			})
		})
	}
}
