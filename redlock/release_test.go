package redlock_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A healthy node that answers a release more slowly than the node timeout
// (a busy machine) still releases: releases have their own, longer bound
// (WithReleaseTimeout), so Unlock reports success and no key is left for a
// whole ttl. Past the release timeout, Unlock fails as before.
func TestSlowReleaseIsNotAFailure(t *testing.T) {
	tests := []struct {
		name    string
		slow    time.Duration
		wantErr error
	}{
		{"slower than the node timeout", 200 * time.Millisecond, nil},
		{"slower than the release timeout", 2 * time.Second, redlock.ErrUnlockFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				c, err := redlock.New(nodes, redlock.WithNodeTimeout(50*time.Millisecond), redlock.WithTTL(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l, err := c.TryLock(t.Context(), "r")
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait() // the requests still on their way after the quorum land first
				for _, m := range mems {
					m.SetSlow(tt.slow)
				}
				err = l.Unlock(t.Context())
				if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("Unlock = %v, want %v", err, tt.wantErr)
				}
				if tt.wantErr != nil {
					return
				}
				for i, m := range mems {
					if v, ok, _ := m.Value(t.Context(), redlock.DefaultKeyPrefix+"r"); ok {
						t.Errorf("node %d still holds %q after Unlock", i, v)
					}
				}
			})
		})
	}
}
