package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A handle names how many nodes its lock was acquired over, and a client
// whose quorum is smaller than theirs refuses it: resumed by a client over one of its
// three nodes (a DLM_NODES that differs between `dlm acquire` and `dlm
// extend`), a quorum of one confirmed the lock for a minute where the two
// other nodes let it expire at its old ttl of 3 s, and a client over the
// three nodes was granted it there 4 s later: two holders. Release over a
// subset is refused too (it left the key on the node it did not name). A
// handle of an earlier version (no node count) is taken as before.
func TestHandleOverOtherNodesIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		nodes, _ := redlocktest.NewMemNodes(3)
		holder, err := redlock.New(nodes, redlock.WithTTL(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		l, err := holder.Lock(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		h := l.Handle()
		if h.Nodes != 3 {
			t.Fatalf("handle of a lock over 3 nodes: Nodes = %d", h.Nodes)
		}
		text, err := h.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if back, err := redlock.ParseHandle(string(text)); err != nil || back.Nodes != 3 {
			t.Fatalf("ParseHandle(MarshalText) = Nodes %d, %v; want 3", back.Nodes, err)
		}
		synctest.Wait()
		one, err := redlock.New(nodes[:1], redlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		if resumed, err := one.Resume(ctx, h, redlock.WithTTL(time.Minute)); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "acquired over 3 nodes, and this client's quorum is 1 of 1 nodes, less than a majority (2)") {
			t.Errorf("Resume by a client over 1 of the lock's 3 nodes = %v, %v; want ErrInvalid naming both quorums", resumed, err)
		}
		if err := one.Release(ctx, h); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Release by a client over 1 of the lock's 3 nodes = %v; want ErrInvalid", err)
		}
		// Two of the three: a quorum of 2, as the lock's; it confirms the
		// lock on two of the nodes that granted it.
		two, err := redlock.New(nodes[:2], redlock.WithTTL(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer two.Close()
		if _, err := two.Resume(ctx, h); err != nil {
			t.Errorf("Resume by a client over 2 of the lock's 3 nodes (the same quorum): %v", err)
		}
		old := h
		old.Nodes = 0 // as an earlier version wrote it
		same, err := redlock.New(nodes, redlock.WithTTL(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer same.Close()
		resumed, err := same.Resume(ctx, old)
		if err != nil {
			t.Fatalf("Resume of a handle without a node count by a client over the same nodes: %v", err)
		}
		if err := resumed.Unlock(ctx); err != nil {
			t.Errorf("Unlock of the resumed lock: %v", err)
		}
	})
}
