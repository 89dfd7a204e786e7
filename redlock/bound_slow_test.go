package redlock_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Resume counts on from the larger of the handle's count and the nodes'
// (bounds.go), so that a handle whose count was edited does not extend a
// lock past its bound. Over healthy nodes that answer slowly (1.2 s, past
// twenty node timeouts) the nodes' count must still be written and read,
// as the lock's own extensions wait for such nodes: else Resume trusts the
// edited handle. Cases: the nodes turn slow after the holder's
// extensions, or are slow from the start (the counts are written to slow
// nodes too).
func TestEditedHandleKeptToItsBoundOverSlowNodes(t *testing.T) {
	const late = 1200 * time.Millisecond
	for _, from := range []string{"fast", "after the extensions", "from the start"} {
		t.Run("slow "+from, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = 10 * time.Second
				nodes, mems := redlocktest.NewMemNodes(3)
				slow := func() {
					for _, m := range mems {
						m.SetSlow(late)
					}
				}
				if from == "from the start" {
					slow()
				}
				holder, err := redlock.New(nodes, redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				l, err := holder.Lock(t.Context(), "r", redlock.WithMaxExtensions(2))
				if err != nil {
					t.Fatal(err)
				}
				_ = l.Handle() // crossed: its extensions are counted on the nodes
				for range 2 {
					if err := l.Extend(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
				if err := l.Extend(t.Context()); !errors.Is(err, redlock.ErrMaxExtensions) {
					t.Fatalf("third Extend = %v, want ErrMaxExtensions", err)
				}
				h := l.Handle()
				h.Extensions = 0 // edited by its holder
				if from == "after the extensions" {
					slow()
				}
				resumer, err := redlock.New(nodes, redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer resumer.Close()
				// A resumer that has worked with the nodes: its own
				// extensions wait for them.
				w, err := resumer.Lock(t.Context(), "warm")
				if err != nil {
					t.Fatalf("warm-up Lock = %v", err)
				}
				if err := w.Unlock(t.Context()); err != nil {
					t.Fatalf("warm-up Unlock = %v", err)
				}
				rl, err := resumer.Resume(t.Context(), h, redlock.WithMaxExtensions(100))
				if !errors.Is(err, redlock.ErrMaxExtensions) {
					more := ""
					if err == nil {
						n := 0
						for ; n < 5 && rl.Extend(t.Context()) == nil; n++ {
						}
						more = fmt.Sprintf(", and then extended it %d times more", n)
					}
					t.Errorf("slow %s: Resume of the edited handle of a lock at its bound (2 of 2 extensions) = %v, want ErrMaxExtensions%s", from, err, more)
				}
			})
		})
	}
}
