package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// A server that disables CONFIG (rename-command CONFIG "", as managed
// services do) answers "unknown command", which no ACL rule grants: dlm
// doctor says so once, as a node-checks FAIL naming the server's
// configuration and --unchecked-nodes (not an ACL fix, and not a second
// finding about CONFIG GET); dlm lock refuses the nodes with one line
// that says the same, with one prefix. Real servers, the dlm binary.
func TestDoctorAndLockSayCONFIGIsDisabled(t *testing.T) {
	t.Parallel()
	var urls, addrs []string
	for range 3 {
		s := redlocktest.StartServer(t, redlocktest.WithArgs("--rename-command", "CONFIG", ""))
		urls, addrs = append(urls, s.URL()), append(addrs, s.Addr())
	}
	r := runDLM(t, 30*time.Second, nil, "doctor", "--nodes", urls[0])
	if r.code != exitFailure {
		t.Errorf("doctor: exit %d, want %d; stdout:\n%s\nstderr: %s", r.code, exitFailure, r.stdout, r.stderr)
	}
	for _, want := range []string{"FAIL  " + addrs[0] + "  [node checks] disables CONFIG GET", "unknown command", "fix: no ACL rule grants", "--unchecked-nodes"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "CONFIG GET"); n != 1 || strings.Contains(r.stdout, "ACL SETUSER") {
		t.Errorf("doctor says CONFIG GET %d times, or names an ACL fix; want one finding without one:\n%s", n, r.stdout)
	}

	r = runDLM(t, 30*time.Second, nil, "lock", "--nodes", strings.Join(urls, ","), "r", "--", "true")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if r.code != exitUsage || !strings.HasPrefix(last, "dlm: 3 of 3 nodes refused") || !strings.Contains(last, "disables CONFIG GET") || !strings.Contains(last, "--unchecked-nodes") {
		t.Errorf("dlm lock: exit %d, stderr:\n%s\nwant %d and one line saying the 3 nodes disable CONFIG GET, naming --unchecked-nodes", r.code, r.stderr, exitUsage)
	}
	if strings.Contains(last, "invalid argument") || strings.Contains(last, "redlock:") || strings.Contains(last, "ACL SETUSER") {
		t.Errorf("dlm lock's error line repeats a prefix or names an ACL fix: %s", last)
	}
}
