package redlock_test

import (
	"errors"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A lock acquired by one client is resumed, extended and released by
// another client over real servers, through the handle's text form; the
// resuming client uses the other adapter, as another program might.
func TestHandleAcrossClients(t *testing.T) {
	as := adapters()
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		other := as[0]
		if other.name == a.name {
			other = as[1]
		}
		cl := redlocktest.Start(t, 3)
		first := dial(t, a, cl, redlock.WithTTL(2*time.Second))
		second := dial(t, other, cl)

		t.Run("resume, extend, unlock", func(t *testing.T) {
			l := lockOnAll(t, cl, first, "job")
			text, err := l.Handle().MarshalText()
			if err != nil {
				t.Fatal(err)
			}
			h, err := redlock.ParseHandle(string(text))
			if err != nil {
				t.Fatal(err)
			}
			r, err := second.Resume(t.Context(), h, redlock.WithTTL(time.Minute))
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			// Resume returns at a quorum; the last extension lands just after.
			redlocktest.Eventually(t, 5*time.Second, func() bool {
				for _, s := range cl.Servers {
					if ttl, _, _ := s.Inspector().TTL(t.Context(), redlock.DefaultKeyPrefix+"job"); ttl < 50*time.Second {
						return false
					}
				}
				return true
			}, "every key extended to the resume's ttl of 1m")
			if err := r.Extend(t.Context()); err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if err := r.Unlock(t.Context()); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			redlocktest.Eventually(t, 5*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 },
				"every key released by the resumed lock's Unlock")
			if err := l.Extend(t.Context()); !errors.Is(err, redlock.ErrNotHeld) {
				t.Errorf("the first client's Extend after the release = %v, want ErrNotHeld", err)
			}
		})

		t.Run("a forged value releases nothing, the true one releases", func(t *testing.T) {
			l, err := first.TryLock(t.Context(), "job", redlock.WithValue(secretValue))
			if err != nil {
				t.Fatal(err)
			}
			redlocktest.Eventually(t, 5*time.Second, func() bool {
				vs := cl.MustValues(redlock.DefaultKeyPrefix + "job")
				return vs[0] == secretValue && vs[1] == secretValue && vs[2] == secretValue
			}, "every node holds the caller's value")
			forged := l.Handle()
			forged.Value = "another-value-0123456789"
			if err := second.Release(t.Context(), forged); !errors.Is(err, redlock.ErrNotHeld) {
				t.Errorf("Release(forged) = %v, want ErrNotHeld", err)
			}
			if _, err := second.Resume(t.Context(), forged); !errors.Is(err, redlock.ErrNotHeld) {
				t.Errorf("Resume(forged) = %v, want ErrNotHeld", err)
			}
			for i, v := range cl.MustValues(redlock.DefaultKeyPrefix + "job") {
				if v != secretValue {
					t.Errorf("node %d holds %q after the forged handle, want the holder's value", i, v)
				}
			}
			if err := second.Release(t.Context(), l.Handle()); err != nil {
				t.Fatalf("Release: %v", err)
			}
			redlocktest.Eventually(t, 5*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 },
				"every key released by the handle")
		})

		t.Run("expired", func(t *testing.T) {
			l, err := first.Lock(t.Context(), "short", redlock.WithTTL(600*time.Millisecond), redlock.WithTries(10)) // tries: a loaded machine may take longer than the ttl
			if err != nil {
				t.Fatal(err)
			}
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 && l.Validity() == 0
			}, "the keys expire with the ttl")
			_, err = second.Resume(t.Context(), l.Handle())
			if !errors.Is(err, redlock.ErrNotHeld) || !errors.Is(err, redlock.ErrExpired) {
				t.Errorf("Resume of an expired handle = %v, want ErrNotHeld and ErrExpired", err)
			}
			if n := keysEverywhere(cl, redlock.DefaultKeyPrefix); n != 0 {
				t.Errorf("%d keys after resuming an expired lock: an extension re-created them", n)
			}
		})
	})
}
