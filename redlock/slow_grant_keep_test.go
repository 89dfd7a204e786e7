package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A fenced lock kept by auto-extension needs, at its grant, the validity of
// one more round trip of its nodes (its first extension) and the lead the
// extensions keep. Over healthy nodes answering 3.5-4.5 s late (ttl 10 s)
// its two phases cost two round trips: it is either refused, with an
// error that says the nodes answer too late for the ttl, or kept; never
// granted and then lost at its first extension.
func TestFencedAutoExtendedLockOverSlowNodesIsKeptOrRefused(t *testing.T) {
	for _, late := range []time.Duration{3500 * time.Millisecond, 4 * time.Second, 4500 * time.Millisecond} {
		t.Run(late.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = 10 * time.Second
				nodes, mems := redlocktest.NewMemNodes(3)
				for i, m := range mems {
					nodes[i] = m.WithFloor()
				}
				mems[1].SetSlow(late)
				mems[2].SetSlow(late)
				c, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				start := time.Now()
				l, err := c.Lock(ctx, "r", redlock.WithAutoExtend())
				cancel()
				if err != nil {
					checkTooSlowForTTL(t, err, late)
					t.Logf("refused after %v: %v", time.Since(start), err)
					return
				}
				defer func() { _ = l.Unlock(t.Context()) }()
				v, granted := l.Validity(), time.Now()
				select {
				case <-l.Done():
					t.Errorf("nodes m2, m3 answering %v late (ttl %v): the fenced lock, granted after %v with a validity of %v, ended %v later: %v",
						late, ttl, granted.Sub(start), v, time.Since(granted), l.Err())
				case <-time.After(time.Minute):
				}
			})
		})
	}
}

// checkTooSlowForTTL fails t unless err, a Lock's over nodes answering late,
// is ErrNotAcquired and says the nodes answer too late for the ttl and
// what to do.
func checkTooSlowForTTL(t *testing.T, err error, late time.Duration) {
	t.Helper()
	if !errors.Is(err, redlock.ErrNotAcquired) || !strings.Contains(err.Error(), "longer ttl") {
		t.Errorf("nodes answering %v late: Lock = %v; want ErrNotAcquired saying the nodes answer too late for the ttl (a longer ttl)", late, err)
	}
}
