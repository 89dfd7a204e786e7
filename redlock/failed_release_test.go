package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A failed acquisition releases only what it may have set: a node that
// refused it holds another acquisition's key, and with a value of the
// caller's (WithValue: a job id reused by a re-run of the job) that key may
// hold the very same value. Releasing it there freed the lock of the holder
// that still worked.
func TestFailedAcquisitionKeepsTheHolder(t *testing.T) {
	const value = "0123456789abcdef0123456789abcdef01234567"
	key := redlock.DefaultKeyPrefix + "job"
	tests := []struct {
		name string
		opts []redlock.Option
		// lock acquires "job" (or the set {job, other}) with opts.
		lock func(ctx context.Context, c *redlock.Client, opts ...redlock.LockOption) (*redlock.Lock, error)
		// down: nodes down while the holder acquires (it holds the rest).
		down int
	}{
		{name: "TryLock", lock: func(ctx context.Context, c *redlock.Client, o ...redlock.LockOption) (*redlock.Lock, error) {
			return c.TryLock(ctx, "job", o...)
		}},
		{name: "TryLock, the holder on 3 of 5", down: 2, lock: func(ctx context.Context, c *redlock.Client, o ...redlock.LockOption) (*redlock.Lock, error) {
			return c.TryLock(ctx, "job", o...)
		}},
		{name: "Lock until the deadline", lock: func(ctx context.Context, c *redlock.Client, o ...redlock.LockOption) (*redlock.Lock, error) {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			return c.Lock(ctx, "job", o...)
		}},
		{name: "fenced TryLock", opts: []redlock.Option{redlock.WithFencing()}, lock: func(ctx context.Context, c *redlock.Client, o ...redlock.LockOption) (*redlock.Lock, error) {
			return c.TryLock(ctx, "job", o...)
		}},
		{name: "TryLockAll", lock: func(ctx context.Context, c *redlock.Client, o ...redlock.LockOption) (*redlock.Lock, error) {
			return c.TryLockAll(ctx, []string{"job", "other"}, o...)
		}},
		{name: "TryWLock", lock: func(ctx context.Context, c *redlock.Client, o ...redlock.LockOption) (*redlock.Lock, error) {
			return c.TryWLock(ctx, "job", o...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(5)
				opts := append([]redlock.Option{redlock.WithTTL(30 * time.Second)}, tt.opts...)
				holderClient, err := redlock.New(nodes, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer holderClient.Close()
				for _, m := range mems[len(mems)-tt.down:] {
					m.SetDown(true)
				}
				holder, err := tt.lock(t.Context(), holderClient, redlock.WithValue(value))
				if err != nil {
					t.Fatalf("the holder: %v", err)
				}
				for _, m := range mems {
					m.SetDown(false)
				}
				second, err := redlock.New(nodes, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer second.Close()
				if l, err := tt.lock(t.Context(), second, redlock.WithValue(value)); !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("a second acquisition with the holder's value: lock %v, error %v, want %v", l != nil, err, redlock.ErrNotAcquired)
				}
				synctest.Wait() // every release the failure sent is answered
				held := 0
				for _, m := range mems[:len(mems)-tt.down] {
					if v, ok, _ := m.Value(t.Context(), key); ok && v == value {
						held++
					}
				}
				if want := len(mems) - tt.down; held != want {
					t.Errorf("after the failed acquisition the holder's key is on %d of the %d nodes it held", held, want)
				}
				if err := holder.Extend(t.Context()); err != nil {
					t.Errorf("the holder's lock after a failed acquisition with its value: %v", err)
				}
			})
		})
	}
}
