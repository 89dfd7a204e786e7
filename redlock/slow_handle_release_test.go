package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A release made from a handle (Client.Release: dlm release HANDLE) over
// healthy slow nodes is confirmed, as Unlock's is: two of three nodes
// answer 1.5 s late, ttl 10 s; the release waits for a slow node up to
// the handle's ttl (redlock/timeout.go). In memory, under synctest.
//
// Failed before (the handle's release carried no ttl, so it gave up at the
// release timeout): "Release(handle) = redlock: release not confirmed by
// a quorum ...; 0 nodes hold the key after it".
func TestSlowHealthyNodesConfirmHandleRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		mems[1].SetSlow(1500 * time.Millisecond)
		mems[2].SetSlow(1500 * time.Millisecond)
		for _, how := range []string{"Unlock", "Release of its handle"} {
			l, err := c.Lock(t.Context(), "r")
			if err != nil {
				t.Fatal(err)
			}
			if how == "Unlock" {
				err = l.Unlock(context.Background())
			} else {
				err = c.Release(context.Background(), l.Handle())
			}
			synctest.Wait()
			held := 0
			for _, m := range mems {
				if _, ok, _ := m.Value(context.Background(), "dlm:lock:r"); ok {
					held++
				}
			}
			if err != nil || held > 0 {
				t.Errorf("two of three nodes healthy but answering 1.5 s late (ttl 10 s): %s = %v; %d nodes hold the key after it", how, err, held)
			}
		}
	})
}
