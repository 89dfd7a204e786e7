package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestFrozenNodeKeepsTheWait: a node that accepts connections but never
// answers (SIGSTOP, a stalled disk) must not stretch a dlm run past what
// the operator bounded it by: --wait (one try with --wait 0) plus the
// command's own time, and a short grace for releases. Found by review:
// with one of three nodes stopped and one port closed, `dlm lock --wait
// 1200ms r -- true` exited 69 after about 4.1 s, and a successful `dlm lock
// --wait 0 r -- true` with one node stopped took 2.1 s: dlm waited in
// Client.Close for the releases owed to the frozen node, and the rueidis
// adapter waited at dial time for the frozen node's handshake. The bounds
// below are generous and well under those times; they are not speed
// assertions. What a dlm run costs on this machine at this moment (a
// loaded machine starts a -race binary slowly: a run took 0.95 s of the
// 1.5 s slack alone while other packages' tests ran) is measured first,
// with every node healthy, and added to every bound.
func TestFrozenNodeKeepsTheWait(t *testing.T) {
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	// A -race binary sleeps a second at exit by default (GORACE
	// atexit_sleep_ms), dlm lock's guard too: not what is measured here.
	env := []string{"GORACE=atexit_sleep_ms=0"}
	var base time.Duration
	for _, adapt := range []string{"rueidis", "goredis", "rueidis"} {
		r := runDLM(t, 30*time.Second, env, "lock", "--adapter", adapt, "--nodes", nodes, "--wait", "0", "base-"+adapt, "--", "true")
		if r.code != 0 {
			t.Fatalf("dlm lock --adapter %s with every node healthy: exit %d; stderr: %s", adapt, r.code, r.stderr)
		}
		base = max(base, r.elapsed)
	}
	t.Logf("a dlm lock run with every node healthy took up to %v", base.Round(time.Millisecond))
	c.Servers[1].Freeze()
	defer c.Servers[1].Thaw()
	slack := 1500*time.Millisecond + base
	// What dlm allows itself at the defaults: one try is the attempt's own
	// limit (twenty node timeouts, a second) and a grace for its releases;
	// the final Close waits at most the grace.
	grace := closeGrace(redlock.DefaultNodeTimeout)
	try := oneTry(redlock.DefaultNodeTimeout, redlock.DefaultTTL)
	check := func(what string, r result, code int, bound time.Duration) {
		t.Helper()
		t.Logf("%s: exit %d after %v", what, r.code, r.elapsed.Round(time.Millisecond))
		if r.code != code {
			t.Errorf("%s: exit %d, want %d; stderr: %s", what, r.code, code, r.stderr)
		}
		if r.elapsed > bound {
			t.Errorf("%s: took %v, want at most %v with a node frozen", what, r.elapsed.Round(time.Millisecond), bound)
		}
	}
	for _, adapt := range []string{"rueidis", "goredis"} {
		r := runDLM(t, 30*time.Second, env, "lock", "--adapter", adapt, "--nodes", nodes, "--wait", "0", "ok-"+adapt, "--", "true")
		check(adapt+": dlm lock --wait 0 with one of three nodes frozen", r, 0, slack)
		if adapt != defaultAdapter {
			continue // the same paths as the default's, but for the dial
		}
		r = runDLM(t, 30*time.Second, env, "acquire", "--adapter", adapt, "--nodes", nodes, "--ttl", "30s", "handle-"+adapt)
		check(adapt+": dlm acquire with one of three nodes frozen", r, 0, grace+slack)
		if r.code == 0 {
			// dlm extend is not bounded here: the library reads and
			// writes the extension count on every node, waiting for a
			// frozen one up to the node timeout's limit each time.
			h := runDLMIn(t, r.stdout, append(env, nodesEnv+"="+nodes), "release", "-")
			check(adapt+": dlm release with one of three nodes frozen", h, 0, slack)
		}
	}
	c.Servers[2].Stop() // its port now refuses: no quorum is possible
	for _, adapt := range []string{"rueidis", "goredis"} {
		r := runDLM(t, 30*time.Second, env, "lock", "--adapter", adapt, "--nodes", nodes, "--wait", "1200ms", "none-"+adapt, "--", "true")
		check(adapt+": dlm lock --wait 1200ms with a node frozen and one down", r, exitUnavailable, 1200*time.Millisecond+grace+slack)
		r = runDLM(t, 30*time.Second, env, "lock", "--adapter", adapt, "--nodes", nodes, "--wait", "0", "none-"+adapt, "--", "true")
		check(adapt+": dlm lock --wait 0 with a node frozen and one down", r, exitUnavailable, try+grace+slack)
	}
}
