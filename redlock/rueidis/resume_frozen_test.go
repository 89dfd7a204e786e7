package rueidis_test

import (
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// TestResumeByANewClientOverAFrozenServer: a new client (dlm extend
// HANDLE) resumes a lock over three servers, the third stopped (it accepts
// connections and never answers): the two others are a quorum, so the
// resume succeeds well inside the lock's validity. A request that joined
// the frozen server's connection set-up, which the client's Connect
// started with a longer bound, used to hold the resume until that bound
// (10 s), past the validity: "lock expired".
func TestResumeByANewClientOverAFrozenServer(t *testing.T) {
	redlocktest.Require(t)
	const ttl = 4 * time.Second
	cl := redlocktest.Start(t, 3)
	urls := cl.URLs()
	frozen := cl.Servers[2]
	frozen.Freeze()
	t.Cleanup(frozen.Thaw)
	holder, err := rueidis.Dial(urls, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	l, err := holder.Lock(t.Context(), "r")
	if err != nil {
		t.Fatalf("the holder's Lock = %v", err)
	}
	h := l.Handle()
	c, err := rueidis.Dial(urls, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	left := time.Until(h.Until)
	start := time.Now()
	if _, err := c.Resume(t.Context(), h); err != nil {
		t.Errorf("a new client's Resume over one frozen server (the handle had %v of validity left) = %v after %v",
			left.Round(time.Millisecond), err, time.Since(start).Round(time.Millisecond))
	}
}
