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

// An extension restores the key on nodes that forgot it (a restart
// without persistence) while they are a minority and the lock is valid, so
// that a rolling restart (one node at a time, each down past the ttl) does
// not end a healthy lock; keys gone from more nodes than a minority still
// end it (ErrNotHeld). Before restore.go, the rolling restart ended the lock
// at the second node ("validity passed without a successful extension").
func TestExtensionRestoresForgottenKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		nodes, mems := redlocktest.NewMemNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(ttl), redlock.WithAutoExtend())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		l, err := c.Lock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mems {
			m.Restart(ttl + ttl/4) // down past the ttl, back empty
			time.Sleep(ttl + ttl/2)
			select {
			case <-l.Done():
				t.Fatalf("the lock ended during a rolling restart: %v", l.Err())
			default:
			}
		}
		time.Sleep(ttl)
		for i, m := range mems {
			if v, ok, _ := m.Value(context.Background(), "dlm:lock:r"); !ok || v != l.Value() {
				t.Errorf("node %d does not hold the lock's value after the rolling restart", i)
			}
		}
		// Keys gone from a majority: the lock is lost, not restored.
		mems[0].Forget()
		mems[1].Forget()
		if err := l.Extend(t.Context()); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Extend with the key gone from 2 of 3 nodes = %v, want ErrNotHeld", err)
		}
	})
}
