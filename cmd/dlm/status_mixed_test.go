package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Over a node list with plain masters and a Redis Cluster, a lock taken
// by `dlm acquire --fencing` is seen by `dlm status` (by name and with
// --all, under its own name, held on the nodes that hold it), its fence keys are
// found by `dlm doctor` on the plain masters and on the cluster's master,
// and `dlm release` of its handle in another process frees it: the keys
// on the plain masters are untagged, those on the cluster tagged, and
// every process names them alike. --hash-tags keeps the earlier layout.
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
	// A grant holds a quorum (the third node may miss the key): each
	// node that holds it holds it in its own layout.
	holders := 0
	for _, s := range plain.Servers {
		keys := s.MustKeys("dlm:")
		if slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "{") }) {
			t.Errorf("plain master %s holds hash-tagged keys: %q", s.Addr(), keys)
		}
		if slices.Contains(keys, redlock.DefaultKeyPrefix+"job") {
			holders++
		}
	}
	if v, _, _ := rc.Inspector().Value(t.Context(), redlock.HashTaggedKey(redlock.DefaultKeyPrefix, "job")); v != "" {
		holders++
	}
	if holders < 2 {
		t.Errorf("the lock key of job, in each node's layout, on %d nodes, want a quorum of 2 at least", holders)
	}
	st := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "job")
	if !strings.Contains(st.stdout, "job: HELD for write") || !strings.Contains(st.stdout, fmt.Sprintf("on %d of 3 nodes", holders)) {
		t.Errorf("dlm status job: want it held on %d of 3 nodes:\n%s%s", holders, st.stdout, st.stderr)
	}
	all := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "--all")
	if !strings.Contains(all.stdout, "job: HELD for write") || strings.Contains(all.stdout, "{job}") {
		t.Errorf("dlm status --all: want job held, under its own name:\n%s%s", all.stdout, all.stderr)
	}
	// Doctor finds the fence keys on each node that holds them (a
	// fenced grant raises them on a quorum at least): untagged on the
	// plain masters, tagged on the cluster, whose one master it names by
	// its port alone.
	doc := runDLM(t, 30*time.Second, nil, "doctor", "--nodes", nodes)
	_, port, _ := strings.Cut(rc.Addrs()[0], ":")
	fenced := 0
	for i, where := range []string{plain.Servers[0].Addr(), plain.Servers[1].Addr(), ":" + port} {
		in, key := plain.Servers[min(i, 1)].Inspector(), redlock.DefaultFencePrefix+"job"
		if i == 2 {
			in, key = rc.Inspector(), redlock.HashTaggedKey(redlock.DefaultFencePrefix, "job")
		}
		if f, err := in.Fence(t.Context(), key); err != nil || f == 0 {
			continue
		}
		fenced++
		re := regexp.MustCompile(`(?m)^\S+\s+\S*` + regexp.QuoteMeta(where) + `\s+\[fencing tokens\]`)
		if !re.MatchString(doc.stdout) {
			t.Errorf("dlm doctor has no fencing finding for %s, which holds fence keys:\n%s", where, doc.stdout)
		}
	}
	if fenced < 2 {
		t.Errorf("fence keys of job on %d nodes, want a quorum of 2 at least", fenced)
	}
	if rel := runDLMIn(t, handle, nil, "release", "--nodes", nodes, "-"); rel.code != 0 {
		t.Errorf("dlm release of the handle: exit %d; stderr %s", rel.code, rel.stderr)
	}
	if st := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "job"); !strings.Contains(st.stdout, "job: free") {
		t.Errorf("the handle did not release the lock:\n%s", st.stdout)
	}

	// --hash-tags keeps the layout of earlier versions on a mixed list:
	// tagged keys on the plain masters too; its handle is refused by a
	// command without it, naming the flag, and released by one with it.
	acq = runDLM(t, 30*time.Second, nil, "acquire", "--nodes", nodes, "--ttl", "60s", "--node-timeout", "1s", "--hash-tags", "old")
	if acq.code != 0 {
		t.Fatalf("dlm acquire --hash-tags: exit %d; stderr %s", acq.code, acq.stderr)
	}
	tagged := 0
	for _, s := range plain.Servers {
		if slices.Contains(s.MustKeys("dlm:lock:"), redlock.HashTaggedKey(redlock.DefaultKeyPrefix, "old")) {
			tagged++
		}
	}
	if tagged == 0 {
		t.Errorf("dlm acquire --hash-tags: no plain master holds the tagged key")
	}
	handle = strings.TrimSpace(acq.stdout)
	if rel := runDLMIn(t, handle, nil, "release", "--nodes", nodes, "-"); rel.code != exitUsage || !strings.Contains(rel.stderr, "--hash-tags") {
		t.Errorf("dlm release without --hash-tags of a --hash-tags handle: exit %d, want %d naming --hash-tags; stderr %s", rel.code, exitUsage, rel.stderr)
	}
	if rel := runDLMIn(t, handle, nil, "release", "--nodes", nodes, "--hash-tags", "-"); rel.code != 0 {
		t.Errorf("dlm release --hash-tags: exit %d; stderr %s", rel.code, rel.stderr)
	}
}
