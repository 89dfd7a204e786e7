package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestExtensionBoundSurvivesAnotherKeySplit: the nodes count a lock's
// extensions (under the info prefix "dlm:info:") so that a holder who
// edits the handle's count is still bounded. The lock key "dlm:lock:x" is
// also prefix "dlm:" + resource "lock:x"; with that split the lock prefix
// overlaps the info prefix, and a client with overlapping prefixes keeps
// no count on the nodes. Found by review: after the bound was reached
// (`dlm extend --max-extensions 1` refused), the handle edited to
// key_prefix "dlm:", resource "lock:x" and extensions 0, given to
// `dlm extend --key-prefix dlm:`, extended the lock again, five times out
// of five.
func TestExtensionBoundSurvivesAnotherKeySplit(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	env := []string{nodesEnv + "=" + strings.Join(c.URLs(), ",")}
	dlm := func(stdin string, args ...string) result {
		return runDLMIn(t, stdin, env, append(args, "--node-timeout", "1s")...)
	}
	r := dlm("", "acquire", "--ttl", "20s", "x")
	if r.code != 0 {
		t.Fatalf("acquire: exit %d; stderr: %s", r.code, r.stderr)
	}
	r = dlm(r.stdout, "extend", "--max-extensions", "1", "-")
	if r.code != 0 {
		t.Fatalf("first extend: exit %d; stderr: %s", r.code, r.stderr)
	}
	h := mustParse(t, r.stdout)
	if r := dlm(r.stdout, "extend", "--max-extensions", "1", "-"); r.code != exitLockLost {
		t.Fatalf("extend past the bound: exit %d, want %d; stderr: %s", r.code, exitLockLost, r.stderr)
	}
	for _, split := range []struct{ prefix, resource string }{{"dlm:", "lock:x"}, {"", "dlm:lock:x"}, {"dlm:lock", ":x"}} {
		f := h
		f.KeyPrefix, f.Resource, f.Resources, f.Extensions = split.prefix, split.resource, nil, 0
		text, err := f.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		r := dlm(string(text), "extend", "--key-prefix", split.prefix, "--max-extensions", "1", "-")
		if r.code == 0 {
			t.Errorf("extend of the handle split as prefix %q + resource %q, count reset: exit 0 past the bound", split.prefix, split.resource)
		}
	}
}

// TestForceReleaseNeedsAQuorumOfAnswers: dlm release --force exits 0 only
// when a quorum of nodes answered that the resource is no longer held.
// Found by review: with one of three nodes stopped and one down, it printed
// "deleted on 0 of 3 nodes, 2 node error(s)" and exited 0, one node's
// answer standing for "the quorum's view".
func TestForceReleaseNeedsAQuorumOfAnswers(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	if r := runDLM(t, 30*time.Second, nil, "acquire", "--nodes", nodes, "--ttl", "60s", "--node-timeout", "1s", "held"); r.code != 0 {
		t.Fatalf("acquire: exit %d; stderr: %s", r.code, r.stderr)
	}
	c.Servers[1].Freeze()
	defer c.Servers[1].Thaw()
	c.Servers[2].Freeze()
	defer c.Servers[2].Thaw()
	r := runDLM(t, 60*time.Second, nil, "release", "--nodes", nodes, "--node-timeout", "100ms", "--force", "held")
	if r.code == 0 {
		t.Errorf("release --force with 2 of 3 nodes stopped: exit 0, want an error; stderr: %s", r.stderr)
	}
}
