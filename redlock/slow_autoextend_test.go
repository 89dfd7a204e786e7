package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// landings is an Observer that records, at each successful automatic
// extension, how much of the validity the lock had left when the
// extension landed (its Until before the extension moved it).
type landings struct {
	redlock.Observer // nil: only Extension is called on it
	mu               sync.Mutex
	l                *redlock.Lock
	until            time.Time
	least            time.Duration
	n                int
}

func (o *landings) start(l *redlock.Lock) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.l, o.until, o.least = l, l.Until(), time.Hour
}

// keptWithLead watches l (auto-extended, observed by o) for 6 ttls: it
// must not end, and every extension must land with at least
// AutoExtendLead of its validity left. what names the case in failures.
func (o *landings) keptWithLead(t *testing.T, l *redlock.Lock, ttl time.Duration, what string) {
	t.Helper()
	o.start(l)
	select {
	case <-l.Done():
		t.Fatalf("%s: the auto-extended lock ended: %v", what, l.Err())
	case <-time.After(6 * ttl):
	}
	o.mu.Lock()
	least, n := o.least, o.n
	o.mu.Unlock()
	if want := redlock.AutoExtendLead(ttl); n < 6 || least < want {
		t.Errorf("%s: %d extensions in 6 ttls; one landed with %v of validity left, want at least %v", what, n, least, want)
	}
	_ = l.Unlock(t.Context())
}

func (o *landings) Attempt(redlock.AttemptEvent) {}
func (o *landings) End(redlock.EndEvent)         {}

func (o *landings) Extension(e redlock.ExtensionEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.l == nil || e.Err != nil || !e.Auto {
		return
	}
	o.least = min(o.least, time.Until(o.until))
	if u := o.l.Until(); u.After(o.until) {
		o.until = u
	}
	o.n++
}

// An auto-extended lock (dlm lock, every election) over healthy slow
// nodes, at every round trip up to (ttl - drift - AutoExtendLead)/2: each
// extension lands with at least AutoExtendLead of the validity left, so
// that a guard that stops the holder's work a margin under it before
// Until (dlm lock's) never stops the work of a lock that is kept. In
// memory, under synctest.
//
// Failed before (the next extension started when twice the last one's
// round trip was left, and landed with one round trip left): "two of
// three nodes healthy, answering 2s late (ttl 10s): ... one landed with
// 2.564666667s of validity left, want at least 3.333333333s"; at 3s,
// 3s; at 500ms with a ttl of 3s, 968ms (dlm lock's guard margin is 500ms
// there).
func TestAutoExtensionsLandAheadOfTheGuard(t *testing.T) {
	for _, tc := range []struct {
		ttl   time.Duration
		lates []time.Duration
	}{
		{10 * time.Second, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 3280 * time.Millisecond}}, // (10s - 102ms - 3.333s)/2 = 3.282s
		{3 * time.Second, []time.Duration{300 * time.Millisecond, 500 * time.Millisecond, 980 * time.Millisecond}},     // (3s - 32ms - 1s)/2 = 984ms
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
					l, err := c.Lock(ctx, "r", redlock.WithAutoExtend())
					cancel()
					if err != nil {
						t.Fatalf("Lock = %v", err)
					}
					obs.keptWithLead(t, l, tc.ttl, fmt.Sprintf("two of three nodes healthy, answering %v late (ttl %v)", late, tc.ttl))
				})
			})
		}
	}
}
