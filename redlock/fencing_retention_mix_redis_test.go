package redlock_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestMixedRetentionTokensIncrease over real servers: B (no retention)
// grants r, A (WithFenceRetention) grants r, and once A's fence keys
// expired B grants r again; its token must be above A's. A server that
// A's grant did not raise keeps B's fence: the test waits for A's token to
// be gone, not for every fence. Every server keeps its floor first, so
// that no grant is a repair by chance (a repair's token is the clock,
// which hides the fault).
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
		// A's fence expires on each server that A raised; a server that
		// A's raise did not reach (B's release of it was still on its
		// way at A's grant, or A's raise came after A's release) keeps
		// B's fence t1, which B, without a retention, keeps forever.
		fences := func() []string { return cl.MustValues(redlock.DefaultFencePrefix + "r") }
		redlocktest.Eventually(t, 10*time.Second, func() bool {
			return !slices.Contains(fences(), strconv.FormatUint(t2, 10))
		}, "A's fence of r (token %d, retention %v) expired on every server that A raised: fences now %v (B's token before it %d)",
			t2, retention, redlocktest.Later(func() any { return fmt.Sprintf("%q", fences()) }), t1)
		t3 := grant(b)
		if !(t1 < t2 && t2 < t3) {
			t.Errorf("tokens of r: B %d, then A %d (WithFenceRetention %v), then B %d once A's fence expired; want increasing", t1, t2, retention, t3)
		}
	})
}
