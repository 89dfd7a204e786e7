package redlock_test

import (
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Real redis-servers, one SIGSTOPped before the clients' first request
// (a new process's dlm lock): a plain, a read, a set and a fenced lock are
// granted by the two others and unlocked. The stopped server thaws after
// the clients gave up on it (their grants' patience, ttl/2 - drift, and
// the releases' timeout passed): it runs what it was sent, and its
// connections given up on, and keeps no lock key; every lock key is gone
// within a few seconds of the thaw, well before the keys' ttl would
// have removed them.
func TestUnlockOverAServerStoppedSinceTheClientsStartLeavesNoKeyOnceItThaws(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		const ttl = 4 * time.Second
		cl := redlocktest.Start(t, 3)
		cl.Servers[2].Freeze()
		defer cl.Servers[2].Thaw()
		c := dial(t, a, cl, redlock.WithTTL(ttl))
		cf := dial(t, a, cl, redlock.WithTTL(ttl), redlock.WithFencing())
		ctx := t.Context()
		var locks []*redlock.Lock
		for _, lock := range []func() (*redlock.Lock, error){
			func() (*redlock.Lock, error) { return c.Lock(ctx, "plain") },
			func() (*redlock.Lock, error) { return c.RLock(ctx, "read") },
			func() (*redlock.Lock, error) { return c.LockAll(ctx, []string{"set1", "set2"}) },
			func() (*redlock.Lock, error) { return cf.Lock(ctx, "fenced") },
		} {
			l, err := lock()
			if err != nil {
				t.Fatal(err)
			}
			locks = append(locks, l)
		}
		start := time.Now()
		for _, l := range locks {
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock %s = %v", l.Resource(), err)
			}
		}
		// Past the grants' patience and the releases' timeout.
		time.Sleep(time.Until(start.Add(ttl/2 + 2*redlock.DefaultReleaseTimeout)))
		cl.Servers[2].Thaw()
		redlocktest.Eventually(t, 3*ttl/4, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 },
			"no lock key left on any server within %v of the stopped one's thaw (a key its acquisition set then would live %v); left: %v",
			3*ttl/4, ttl, redlocktest.Later(func() any { return keysByServer(cl, redlock.DefaultKeyPrefix) }))
	})
}
