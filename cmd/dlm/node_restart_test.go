package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// TestNodeRestartWaitsTheCrashedRunsMaxTTL: a start after a crash waits
// the larger of its own --max-ttl and the crashed run's, since clients
// took locks as long as the max ttl the crashed run advertised.
// Regression: the wait was the new run's --max-ttl, so a node restarted
// with a smaller one served empty while locks it had forgotten were valid.
func TestNodeRestartWaitsTheCrashedRunsMaxTTL(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	port, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const crashed, next = 2 * time.Second, 100 * time.Millisecond
	n := startNode(t, port, dir, crashed)
	redlocktest.Eventually(t, 20*time.Second, func() bool { return pings(port) }, "dlm node never served; log:\n%s", n.stderr())
	n.crashRedis()
	n.wait()

	start := time.Now()
	n = startNode(t, port, dir, next)
	redlocktest.Eventually(t, 30*time.Second, func() bool { return pings(port) }, "dlm node never served after the wait; log:\n%s", n.stderr())
	if waited := time.Since(start); waited < crashed {
		t.Errorf("served %v after a crash of a run with --max-ttl %v (restarted with --max-ttl %v), want a wait of %v; log:\n%s", waited.Round(time.Millisecond), crashed, next, crashed, n.stderr())
	}
	if want := "the crashed run's --max-ttl " + crashed.String(); !strings.Contains(n.stderr(), want) {
		t.Errorf("log does not say %q:\n%s", want, n.stderr())
	}
}

// TestRestartWait: the wait after a crash is the larger of the two max ttls;
// a marker without one (an older dlm's) leaves the new run's.
func TestRestartWait(t *testing.T) {
	for _, tc := range []struct {
		marker string
		now    time.Duration
		want   time.Duration
	}{
		{"pid 1 started 2026-01-01T00:00:00Z max-ttl 30s", 15 * time.Second, 30 * time.Second},
		{"pid 1 started 2026-01-01T00:00:00Z max-ttl 5s", 15 * time.Second, 15 * time.Second},
		{"pid 1 started 2026-01-01T00:00:00Z", 15 * time.Second, 15 * time.Second},           // an older dlm's marker
		{"pid 1 started 2026-01-01T00:00:00Z max-ttl x", 15 * time.Second, 15 * time.Second}, // unreadable
		{"", 15 * time.Second, 15 * time.Second},
	} {
		if got, _ := restartWait([]byte(tc.marker), tc.now); got != tc.want {
			t.Errorf("restartWait(%q, %v) = %v, want %v", tc.marker, tc.now, got, tc.want)
		}
	}
	if got, _ := restartWait([]byte(markerText(7, time.Now(), 42*time.Second)), time.Second); got != 42*time.Second {
		t.Errorf("restartWait of markerText's max-ttl 42s = %v, want 42s", got)
	}
}
