package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// TestStatusAndDoctorWaitForSlowNodes: two of three healthy nodes answer
// each reply late, under --timeout but not under two of it (a new
// connection's handshake and its first request are two round trips). The
// operator's tools must call them up and slow, not down, and dlm status h
// with h held on the two slow nodes (a quorum) must not call it free from
// the fast node's answer. The delay is scaled down from a 1s delay under
// the default --timeout 2s, to keep the test short.
func TestStatusAndDoctorWaitForSlowNodes(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	const delay, timeout = 400 * time.Millisecond, "790ms" // two round trips: 800ms
	c := redlocktest.Start(t, 3)
	urls := c.URLs()
	var d atomic.Int64
	d.Store(int64(delay))
	for i := 1; i < 3; i++ {
		urls[i] = "redis://" + redlocktest.DelayProxy(t, c.Servers[i].Addr(), &d)
	}
	nodes := strings.Join(urls, ",")
	for _, srv := range c.Servers[1:] {
		if err := srv.Client().Set(t.Context(), "dlm:lock:h", "another-holder-0123456789", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"status", "--nodes", nodes, "--timeout", timeout, "h"},
		{"doctor", "--nodes", nodes, "--timeout", timeout},
	} {
		r := runDLM(t, time.Minute, nil, args...)
		if r.code != 0 || strings.Contains(r.stdout, "down") || strings.Contains(r.stdout, "unreachable") || strings.Contains(r.stdout, "h: free") || strings.Contains(r.stdout, "CONFIG GET failed") {
			t.Errorf("dlm %s over two of three healthy nodes answering %v late (--timeout %s): exit %d after %v\nstdout:\n%s\nstderr:\n%s",
				args[0], delay, timeout, r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
		}
	}
}

// TestStatusUnknownWhenSilentNodesCouldHoldIt: a resource that the nodes
// that answered read free is "unknown", not free, when the nodes that did
// not answer could hold it with them (a quorum); free when they could not.
func TestStatusUnknownWhenSilentNodesCouldHoldIt(t *testing.T) {
	t.Parallel()
	silent := redlock.NodeView{Node: "n", Err: context.DeadlineExceeded}
	absent := redlock.NodeView{Node: "n", Kind: adapter.KeyAbsent}
	remnant := redlock.NodeView{Node: "n", Kind: adapter.KeyLock, TTL: time.Second, Holder: 1}
	for _, tc := range []struct {
		name  string
		nodes []redlock.NodeView
		want  string
	}{
		{"two of three silent", []redlock.NodeView{absent, silent, silent}, "r: unknown: 2 node(s) did not answer"},
		{"one silent, one key", []redlock.NodeView{absent, remnant, silent}, "r: unknown: 1 node(s) did not answer"},
		{"one silent, two absent", []redlock.NodeView{absent, absent, silent}, "r: free"},
		{"all answered", []redlock.NodeView{absent, absent, absent}, "r: free (no node holds it)"},
	} {
		info := redlock.LockInfo{Resource: "r", Mode: redlock.ModeFree, Nodes: tc.nodes}
		if got := describeLock(info, 2, "dlm:lock:r"); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want it to begin %q", tc.name, got, tc.want)
		}
	}
}
