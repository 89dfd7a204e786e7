package goredis_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// A script that does not batch (a fenced acquisition, here) goes by EVAL
// on its first run on a node, and by EVALSHA once the node's server ran
// it: its first run costs one round trip, not two (EVALSHA answered
// NOSCRIPT, then EVAL), which over a node answering seconds late was a
// grant's whole patience.
func TestScriptsFirstRunIsOneRoundTrip(t *testing.T) {
	n, truth := lateNode(t, 0)
	ctx := t.Context()
	if ok, err := n.Acquire(ctx, "connected", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v; want true", ok, err)
	}
	if err := truth.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls := func(cmd string) int {
		t.Helper()
		txt, err := truth.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		// A call answered NOSCRIPT counts as a call (and as failed).
		m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(txt)
		if m == nil {
			return 0
		}
		c, _ := strconv.Atoi(m[1])
		return c
	}
	for i, want := range []struct{ eval, evalsha int }{{1, 0}, {1, 1}} {
		if ok, _, err := n.AcquireFenced(ctx, "fenced", "dlm:fence:fenced", "v", time.Minute); err != nil || ok != (i == 0) {
			t.Fatalf("AcquireFenced #%d = %v, %v; want %v", i+1, ok, err, i == 0)
		}
		if got, gotSha := calls("eval"), calls("evalsha"); got != want.eval || gotSha != want.evalsha {
			t.Errorf("after fenced acquisition #%d the server got EVAL %d times and EVALSHA %d times; want %d and %d", i+1, got, gotSha, want.eval, want.evalsha)
		}
	}
}
