package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// The real-server face of TestNewClientsHandleRequestsOverSlowNodes: a
// lock taken over direct connections; its handle released, or resumed, by
// a new client whose connections to servers 2 and 3 pass a proxy that
// answers 600 ms late, past the limit (node timeout 20 ms: limit 400 ms)
// and the release timeout (300 ms): dlm release HANDLE and dlm extend
// HANDLE from a loaded machine. The Release keeps its release marker on
// every server first. go-redis
// only (a new rueidis client's connection costs a round trip more, and
// its first requests are tested in the rueidis package).
//
// Failed before (only a grant waited for a node the client had never met):
// "a new client's Release of a handle over servers 2, 3 answering 600ms
// late = redlock: release lock "r-Release" by handle: redlock: release not
// confirmed by a quorum ...: context deadline exceeded ...", and for the
// Resume "... lock not extended ...".
func TestNewClientsHandleRequestsOverSlowNodesRedis(t *testing.T) {
	const ttl, late = 10 * time.Second, 600 * time.Millisecond
	a := nodeAdapter{"goredis", goredis.Dial}
	cl := redlocktest.Start(t, 3)
	opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithNodeTimeout(20 * time.Millisecond), redlock.WithReleaseTimeout(300 * time.Millisecond)}
	holder := dialURLs(t, a, cl.URLs(), opts...)
	var delay atomic.Int64
	delay.Store(int64(late))
	urls := []string{cl.Servers[0].URL(), "redis://" + delayProxy(t, cl.Servers[1].Addr(), &delay), "redis://" + delayProxy(t, cl.Servers[2].Addr(), &delay)}
	for _, how := range []string{"Release", "Resume"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			l, err := holder.Lock(t.Context(), "r-"+how)
			if err != nil {
				t.Fatal(err)
			}
			fresh := dialURLs(t, a, urls, opts...)
			start := time.Now()
			if how == "Release" {
				err = fresh.Release(context.Background(), l.Handle())
			} else {
				_, err = fresh.Resume(context.Background(), l.Handle())
			}
			if err != nil {
				t.Fatalf("a new client's %s of a handle over servers 2, 3 answering %v late = %v after %v", how, late, err, time.Since(start).Round(time.Millisecond))
			}
			t.Logf("%s: ok after %v", how, time.Since(start).Round(time.Millisecond))
			if how == "Release" {
				// The third server's release may land after the quorum's:
				// Close waits for it.
				if err := fresh.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				for i, s := range cl.Servers {
					if keys := s.MustKeys("dlm:lock:r-" + how); len(keys) > 0 {
						t.Errorf("server %d holds the key after the Release and Close", i+1)
					}
					if marks := s.MustKeys("dlm:info:rel:"); len(marks) != 1 {
						t.Errorf("server %d keeps %d release markers after the Release, want 1", i+1, len(marks))
					}
				}
			}
		})
	}
}
