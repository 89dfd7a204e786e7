package redlock_test

import (
	"slices"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestMixedRetentionTokensIncrease over real servers: B (no retention)
// grants r, A (WithFenceRetention) grants r, and once A's fence keys
// expired B grants r again; its token must be above A's. Every server
// keeps its floor first, so that no grant is a repair by chance (a
// repair's token is the clock, which hides the fault).
func TestMixedRetentionTokensIncreaseRedis(t *testing.T) {
	const ttl, retention = time.Second, 1500 * time.Millisecond
	eachAdapterParallel(t, func(t *testing.T, ad nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		b := dial(t, ad, cl, redlock.WithFencing(), redlock.WithTTL(ttl))
		a := dial(t, ad, cl, redlock.WithFencing(), redlock.WithTTL(ttl), redlock.WithFenceRetention(retention))
		grant := func(c *redlock.Client) uint64 {
			t.Helper()
			l, err := c.Lock(t.Context(), "r")
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			return l.Token()
		}
		// Every server keeps its floor, set by a client over it alone
		// (a quorum of one: its repair lands), so that none of the
		// grants below is a repair.
		for _, url := range cl.URLs() {
			one := dialURLs(t, ad, []string{url}, redlock.WithFencing(), redlock.WithNodeTimeout(500*time.Millisecond))
			l, err := one.Lock(t.Context(), "seed")
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		t1 := grant(b)
		t2 := grant(a)
		redlocktest.Eventually(t, 10*time.Second, func() bool {
			return slices.Equal(cl.MustValues(redlock.DefaultFencePrefix+"r"), []string{"", "", ""})
		}, "A's fence of r expired on every server: %q", cl.MustValues(redlock.DefaultFencePrefix+"r"))
		t3 := grant(b)
		if !(t1 < t2 && t2 < t3) {
			t.Errorf("tokens of r: B %d, then A %d (WithFenceRetention %v), then B %d once A's fence expired; want increasing", t1, t2, retention, t3)
		}
	})
}
