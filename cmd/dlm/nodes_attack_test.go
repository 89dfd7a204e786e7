package main

import (
	"strings"
	"testing"
	"time"
)

// TestNodesFlagDropsNothing: a --nodes value must name every node it holds
// or be refused. pflag reads a string-slice flag as one line of CSV, so
// node URLs given one per line (--nodes "$(cat nodes.txt)") were cut to the
// first line in silence: three nodes became one, with a quorum of one,
// while DLM_NODES with the same value is refused as a URL with a control
// character.
func TestNodesFlagDropsNothing(t *testing.T) {
	t.Skip("finding: --nodes with one URL per line keeps the first node only (quorum 1, the rest dropped in silence); for the lead (cmd/dlm flag parsing)")
	nodes := "redis://127.0.0.1:1\nredis://127.0.0.1:2,redis://127.0.0.1:3"
	res := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "--timeout", "200ms", "r")
	if res.code == 64 {
		return
	}
	if !strings.Contains(res.stdout, "3 nodes") {
		t.Errorf("status --nodes %q: exit %d, want 64 or 3 nodes listed\nstdout: %s\nstderr: %s", nodes, res.code, res.stdout, res.stderr)
	}
}
