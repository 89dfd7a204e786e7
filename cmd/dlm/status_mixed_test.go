package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Over a node list with plain masters and a Redis Cluster, a lock taken
// by `dlm acquire --fencing` is seen by `dlm status` (by name and with
// --all, under its own name, held on every node), its fence keys are
// found by `dlm doctor` on the plain masters and on the cluster's master,
// and `dlm release` of its handle in another process frees it: the keys
// on the plain masters are untagged, those on the cluster tagged, and
// every process names them alike.
func TestStatusMixedNodeList(t *testing.T) {
	t.Parallel()
	plain := redlocktest.Start(t, 2)
	rc := redlocktest.StartRedisCluster(t, 1, 0)
	nodes := strings.Join(append(plain.URLs(), rc.URL()), ",")
	acq := runDLM(t, 30*time.Second, nil, "acquire", "--nodes", nodes, "--ttl", "60s", "--node-timeout", "1s", "--fencing", "job")
	if acq.code != 0 {
		t.Fatalf("dlm acquire: exit %d; stderr %s", acq.code, acq.stderr)
	}
	handle := strings.TrimSpace(acq.stdout)
	for _, s := range plain.Servers {
		if keys := s.MustKeys("dlm:"); !strings.Contains(strings.Join(keys, " "), redlock.DefaultKeyPrefix+"job") {
			t.Errorf("plain master %s: keys %q, want the untagged lock key", s.Addr(), keys)
		}
	}
	if ok, _, _ := rc.Inspector().Value(t.Context(), redlock.HashTaggedKey(redlock.DefaultKeyPrefix, "job")); ok == "" {
		t.Errorf("the cluster node does not hold the tagged lock key")
	}
	st := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "job")
	if !strings.Contains(st.stdout, "job: HELD for write") || !strings.Contains(st.stdout, "on 3 of 3 nodes") {
		t.Errorf("dlm status job: want it held on 3 of 3 nodes:\n%s%s", st.stdout, st.stderr)
	}
	all := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "--all")
	if !strings.Contains(all.stdout, "job: HELD for write") || strings.Contains(all.stdout, "{job}") {
		t.Errorf("dlm status --all: want job held, under its own name:\n%s%s", all.stdout, all.stderr)
	}
	doc := runDLM(t, 30*time.Second, nil, "doctor", "--nodes", nodes)
	// (A cluster of one master names it by its port alone.)
	_, port, _ := strings.Cut(rc.Addrs()[0], ":")
	for _, where := range append(plain.URLs(), ":"+port) {
		re := regexp.MustCompile(`(?m)^\S+\s+\S*` + regexp.QuoteMeta(strings.TrimPrefix(where, "redis://")) + `\s+\[fencing tokens\]`)
		if !re.MatchString(doc.stdout) {
			t.Errorf("dlm doctor has no fencing finding for %s, which holds fence keys:\n%s", where, doc.stdout)
		}
	}
	if rel := runDLMIn(t, handle, nil, "release", "--nodes", nodes, "-"); rel.code != 0 {
		t.Errorf("dlm release of the handle: exit %d; stderr %s", rel.code, rel.stderr)
	}
	if st := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "job"); !strings.Contains(st.stdout, "job: free") {
		t.Errorf("the handle did not release the lock:\n%s", st.stdout)
	}
}
