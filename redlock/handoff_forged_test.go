package redlock_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// overheard is a MemNode whose subscribers an attacker reaches too: a
// client of the same Redis that may PUBLISH on the release channels
// (WatchReleases records the subscribers' notify functions, by node).
type overheard struct {
	redlock.Node // n's blocking methods (redlocktest.Blocking)
	n            *redlocktest.MemNode
	i            int // the node's index in notifys
	mu           *sync.Mutex
	notifys      [][]func(key, value string)
}

func (o overheard) String() string { return o.n.String() }
func (o overheard) ReleaseAnnounce(ctx context.Context, key, value string) (bool, error) {
	return o.n.ReleaseAnnounce(ctx, key, value)
}
func (o overheard) WatchReleases(notify func(key, value string)) (adapter.ReleaseWatch, error) {
	o.mu.Lock()
	o.notifys[o.i] = append(o.notifys[o.i], notify)
	o.mu.Unlock()
	return o.n.WatchReleases(notify)
}

// Announcements are hints (adapter.ReleaseWatch), and anyone who may
// PUBLISH on a node can forge them. A forged release of a key that stays
// held costs each waiting client one attempt: the attempt at the first
// rank that failed is retried one rank slot later only when the node
// whose announcement woke it granted it or had not answered when it was
// decided (it may have raced the release on the others, wait.go:
// afterFirst); a node that says the key is held did not release it.
// Before, every forgery cost two attempts (1000 forgeries: 2000 attempts).
// The node heard from answers first here (the nodes answer 100, 200 and
// 300 microseconds after a request, and the forgeries reach the waiter
// from the fastest first): when the nodes answered at the same instant,
// whether the node heard from was the one not yet heard at the decision
// was up to the scheduler, from about one attempt in seven on a quiet
// machine to one in three on a loaded one (1327-1358 attempts).
func TestHandoffForgedReleaseCostsOneAttempt(t *testing.T) { // R10, R14
	const forged = 1000
	if n := forgedAttempts(t, forged); n != forged {
		t.Errorf("%d attempts on a held key during %d forged announcements, want %d", n, forged, forged)
	}
}

// Finding (skipped): forged release announcements drive attempts. 1000
// forged announcements, one per millisecond, each of a value no client
// released (the attacker's tag is unknown to the victim, so it ranks first
// and goes at once), made a waiter whose timed retry is a minute away
// attempt once per forgery, a request to every node each. Pushing a
// victim back instead (forged releases of its own tag, read from any
// announcement of its releases) is bounded: its rank never exceeds
// maxOrder-1 slots, and its wait never the minimum retry delay (R10).
// Nothing in an announcement can be checked by its receiver; a bound
// would be a budget of attempts on announcements per retry delay.
func TestHandoffForgedReleasesDoNotDriveAttempts(t *testing.T) { // R10, R14
	t.Skip("finding: every forged release announcement makes each waiter attempt at once (see the comment)")
	const forged = 1000
	if n := forgedAttempts(t, forged); n > forged/100 {
		t.Errorf("%d attempts on a held key during %d forged announcements, want at most %d", n, forged, forged/100)
	}
}

// forgedAttempts returns how many attempts a waiter for a held key made
// while an attacker published forged release announcements of the key,
// one a millisecond, on every node, the fastest to answer first.
func forgedAttempts(t *testing.T, forged int) int64 {
	var n int64
	synctest.Test(t, func(t *testing.T) {
		_, mems := redlocktest.NewMemNodes(3)
		var mu sync.Mutex
		notifys := make([][]func(key, value string), len(mems))
		nodes := make([]redlock.Node, len(mems))
		for i, m := range mems {
			// Answers at distinct instants: which node an attempt has
			// not heard from when it is decided does not depend on the
			// order in which goroutines run.
			m.SetSlow(time.Duration(i+1) * 100 * time.Microsecond)
			nodes[i] = overheard{redlocktest.Blocking(m), m, i, &mu, notifys}
		}
		holder := memClient(t, nodes, redlock.WithTTL(time.Hour))
		var attempts atomic.Int64
		victim := memClient(t, nodes, redlock.WithTTL(time.Hour), redlock.WithRetryDelay(time.Minute, time.Minute),
			redlock.WithObserver(herdObserver{&attempts}))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if _, err := holder.TryLock(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = victim.Lock(ctx, "k")
		}()
		time.Sleep(10 * time.Millisecond) // the victim fails once, queues and listens
		synctest.Wait()
		start := attempts.Load()
		var raw [27]byte
		for range forged {
			_, _ = rand.Read(raw[:])
			v := base64.RawURLEncoding.EncodeToString(raw[:])[:35]
			mu.Lock()
			for _, ns := range notifys {
				for _, n := range ns {
					n("dlm:lock:k", v)
				}
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
		cancel()
		<-done
		n = attempts.Load() - start
		t.Logf("%d attempts during %d forged announcements", n, forged)
	})
	return n
}
