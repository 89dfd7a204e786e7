package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// Every handle that dlm acquire prints can be given back to dlm release
// (and dlm extend), or dlm acquire refuses the resources up front, locking
// nothing. Failed on 314a9ee: a set of 200 resources of 60 bytes was
// acquired and its handle printed (over 16 KiB), and dlm release refused
// it ("over 16384 bytes, not a handle", exit 64): a lock nobody could
// release before its ttl.
func TestReviewAcquireHandleReleasable(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	env := []string{nodesEnv + "=" + strings.Join(c.URLs(), ",")}
	args := []string{"acquire", "--node-timeout", "1s", "--ttl", "1m"}
	for i := range 200 {
		args = append(args, fmt.Sprintf("r%03d-%s", i, strings.Repeat("x", 55)))
	}
	r := runDLM(t, 30*time.Second, env, args...)
	if r.code != 0 {
		if r.code != exitUsage || !strings.Contains(r.stderr, "resource names") {
			t.Errorf("acquire of 200 long names: exit %d, want 0 or %d naming the resource names; stderr: %s", r.code, exitUsage, r.stderr)
		}
		if keys := keysOn(c); len(keys) != 0 {
			t.Errorf("acquire refused, yet keys are on the nodes: %d", len(keys))
		}
		return
	}
	if rel := runDLMIn(t, r.stdout, env, "release", "--node-timeout", "1s", "-"); rel.code != 0 {
		t.Fatalf("release of the handle dlm acquire printed (%d bytes): exit %d; stderr: %s", len(r.stdout), rel.code, rel.stderr)
	}
}
