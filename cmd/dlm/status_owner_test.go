package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// noValueBytes fails when out holds any 6 characters in a row of value.
func noValueBytes(t *testing.T, what, out, value string) {
	t.Helper()
	for i := 0; i+6 <= len(value); i++ {
		if strings.Contains(out, value[i:i+6]) {
			t.Errorf("%s shows bytes %d to %d of the lock's value:\n%s", what, i, i+6, out)
			return
		}
	}
}

// dlm status showed the first 12 bytes of the lock's
// secret value, no owner, and "free (no node holds it)" for a resource
// held by readers. It now shows the mode, the owner, the validity and the
// token, and never a byte of the value; --all lists the held locks; and
// dlm release --force releases a lock whoever holds it, and says so.
func TestStatusShowsOwnerNotValue(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	env := []string{nodesEnv + "=" + nodes}
	r := runDLM(t, 30*time.Second, env, "acquire", "--ttl", "60s", "--node-timeout", "1s", "--owner", "deploy job 42", "deploy")
	if r.code != 0 {
		t.Fatalf("acquire: exit %d; stderr: %s", r.code, r.stderr)
	}
	h := mustParse(t, r.stdout)
	// On a majority: the third node's request can miss the node timeout
	// on a loaded machine ("on 2 of 3 nodes", its key absent).
	if !heldByQuorum(t, c, "deploy", h.Value) {
		t.Fatalf("acquire exited 0 without the lock on a majority: %q", c.MustValues(redlock.DefaultKeyPrefix+"deploy"))
	}
	held := 0
	for _, v := range c.MustValues(redlock.DefaultKeyPrefix + "deploy") {
		if v == h.Value {
			held++
		}
	}

	ready := t.TempDir() + "/ready"
	reader, _, stderr := dlmCmd(t, nil, "lock", "--nodes", nodes, "--read", "--ttl", "30s", "--node-timeout", "1s", "--owner", "nightly export",
		"catalog", "--", "sh", "-c", `touch "$1"; while :; do sleep 0.05; done`, "sh", ready)
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Process.Signal(syscall.SIGTERM); _ = reader.Wait() })
	redlocktest.Eventually(t, 20*time.Second, func() bool { return fileExists(ready) }, "dlm lock --read never ran its command; stderr: %s", stderr)

	r = runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "deploy", "catalog", "other")
	if r.code != 0 {
		t.Fatalf("status: exit %d; stderr: %s", r.code, r.stderr)
	}
	noValueBytes(t, "status", r.stdout+r.stderr, h.Value)
	for _, want := range []string{
		fmt.Sprintf(`deploy: HELD for write by "deploy job 42" on %d of 3 nodes (quorum 2)`, held),
		`catalog: HELD for read by 1 reader on a quorum (quorum 2): "nightly export"`,
		"other: free",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status output lacks %q:\n%s", want, r.stdout)
		}
	}

	r = runDLM(t, 30*time.Second, nil, "status", "--all", "--nodes", nodes)
	if r.code != 0 {
		t.Fatalf("status --all: exit %d; stderr: %s", r.code, r.stderr)
	}
	noValueBytes(t, "status --all", r.stdout+r.stderr, h.Value)
	if !strings.Contains(r.stdout, `deploy: HELD for write by "deploy job 42"`) || !strings.Contains(r.stdout, `catalog: HELD for read`) {
		t.Errorf("status --all does not list both locks:\n%s", r.stdout)
	}

	r = runDLM(t, 30*time.Second, env, "release", "--force", "deploy")
	if r.code != 0 || !strings.Contains(r.stderr, "FORCE RELEASE") || !strings.Contains(r.stderr, `"deploy job 42"`) {
		t.Errorf("release --force: exit %d; stderr: %s", r.code, r.stderr)
	}
	noValueBytes(t, "release --force", r.stdout+r.stderr, h.Value)
	for i, v := range c.MustValues("dlm:lock:deploy") {
		if v != "" {
			t.Errorf("node %d still holds deploy after release --force", i)
		}
	}
	if r := runDLM(t, 30*time.Second, env, "release", "deploy"); r.code != exitUsage {
		t.Errorf("release of a resource name without --force: exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
	}
}

// dlm status shows an election's leader, term and since
// when beside the election's lock.
func TestStatusShowsElection(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	ready := t.TempDir() + "/ready"
	leader, _, stderr := dlmCmd(t, nil, "elect", "--nodes", nodes, "--ttl", "30s", "--node-timeout", "1s", "jobs", "--id", "alpha",
		"--", "sh", "-c", `touch "$1"; while :; do sleep 0.05; done`, "sh", ready)
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leader.Process.Signal(syscall.SIGTERM); _ = leader.Wait() })
	redlocktest.Eventually(t, 20*time.Second, func() bool { return fileExists(ready) }, "dlm elect never ran its command; stderr: %s", stderr)

	r := runDLM(t, 30*time.Second, nil, "status", "--all", "--nodes", nodes)
	if r.code != 0 {
		t.Fatalf("status --all: exit %d; stderr: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `election "jobs": leader "alpha", term `) || !strings.Contains(r.stdout, " since ") {
		t.Errorf("status --all does not show the election's leader, term and since:\n%s", r.stdout)
	}
}
