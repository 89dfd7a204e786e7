package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestLateGrantOfAFailedAttemptIsReleased: an attempt that failed (two of
// three nodes hold the resource for another) is released on the node that
// grants it late, however late within the requests' own deadline the grant
// comes. The releases were bounded by two node timeouts from the decision,
// so a grant that came later found its release's context ended, and the
// key stayed on that node for its whole ttl: "the slow node still holds
// the key of a failed Lock" for a node answering after 150 ms and 400 ms
// (node timeout 50 ms).
func TestLateGrantOfAFailedAttemptIsReleased(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		for _, slow := range []time.Duration{60 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond} {
			name := "async/" + slow.String()
			if blocking {
				name = "blocking/" + slow.String()
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					nodes, mems := redlocktest.NewMemNodes(3)
					if blocking {
						for i := range nodes {
							nodes[i] = redlocktest.Blocking(nodes[i])
						}
					}
					ctx := context.Background()
					key := redlock.DefaultKeyPrefix + "r"
					const other = "another-holders-value-0123456789"
					for _, m := range mems[:2] {
						if err := m.Put(ctx, key, other); err != nil {
							t.Fatal(err)
						}
					}
					mems[2].SetSlow(slow)
					c, err := redlock.New(nodes, redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(50*time.Millisecond))
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					lctx, cancel := context.WithTimeout(ctx, time.Second)
					_, err = c.Lock(lctx, "r")
					cancel()
					if err == nil {
						t.Fatal("Lock acquired a resource that two of three nodes hold for another")
					}
					// Every request and release of the failed attempts is
					// answered within the requests' deadline (a second)
					// and two node timeouts.
					time.Sleep(2 * time.Second)
					synctest.Wait()
					if v, held, _ := mems[2].Value(ctx, key); held {
						t.Errorf("the slow node still holds the key of a failed Lock (a value of %d bytes), for its ttl", len(v))
					}
					for i, m := range mems[:2] {
						if v, _, _ := m.Value(ctx, key); v != other {
							t.Errorf("node %d lost the other holder's key", i)
						}
					}
				})
			})
		}
	}
}
