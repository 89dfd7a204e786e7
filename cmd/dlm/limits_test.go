package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestResourceEnvUnambiguous: DLM_LOCK_RESOURCE tells apart sets whose
// names, joined by commas, read the same ("a,b c" and
// "a b,c" both gave "a,b,c").
func TestResourceEnvUnambiguous(t *testing.T) {
	tests := []struct {
		sets [2][]string
	}{
		{[2][]string{{"a,b", "c"}, {"a", "b,c"}}},
		{[2][]string{{"a,b,c"}, {"a", "b", "c"}}},
	}
	for _, tt := range tests {
		x, y := resourceEnv(tt.sets[0]), resourceEnv(tt.sets[1])
		if x == y {
			t.Errorf("%q and %q both give DLM_LOCK_RESOURCE %q", tt.sets[0], tt.sets[1], x)
		}
		for i, set := range tt.sets {
			got := strings.Split(resourceEnv(set), "\n")
			if strings.Join(got, "|") != strings.Join(slices.Sorted(slices.Values(set)), "|") {
				t.Errorf("set %d %q reads back as %q", i, set, got)
			}
		}
	}
	if got := resourceEnv([]string{"one"}); got != "one" {
		t.Errorf("one resource gives %q, want its name", got)
	}
}

// TestUsageLimits: values no run can use exit 64 with the limit, before
// any node is contacted (--node-timeout 1ns and a
// 100,000-resource lock exited 69, "nodes unreachable", and dlm lock ran
// a command with a newline in its resource name, which dlm elect refuses).
func TestUsageLimits(t *testing.T) {
	t.Parallel()
	node := "redis://127.0.0.1:1" // nothing listens: a contacted node would give 69
	many := make([]string, 100000)
	for i := range many {
		many[i] = "r" + strconv.Itoa(i)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"lock node-timeout 1ns", []string{"lock", "--nodes", node, "--node-timeout", "1ns", "r", "--", "true"}, "--node-timeout 1ns is under the least of 1ms"},
		{"acquire node-timeout 1ns", []string{"acquire", "--nodes", node, "--node-timeout", "1ns", "r"}, "--node-timeout 1ns is under the least of 1ms"},
		{"lock 100000 resources", append(append([]string{"lock", "--nodes", node}, many...), "--", "true"), "100000 resources in one lock, over the limit of 1000"},
		{"acquire 1001 resources", append([]string{"acquire", "--nodes", node}, many[:1001]...), "1001 resources in one lock, over the limit of 1000"},
		{"lock newline in name", []string{"lock", "--nodes", node, "a\nb", "--", "true"}, `RESOURCE "a\nb" has an unprintable character U+000A`},
		{"lock tab in a set", []string{"lock", "--nodes", node, "a", "b\tc", "--", "true"}, `RESOURCE 2 of 2 "b\tc" has an unprintable character U+0009`},
		{"acquire escape in name", []string{"acquire", "--nodes", node, "a\x1b[2J"}, `has an unprintable character U+001B`},
		{"nodes on several lines", []string{"lock", "--nodes", node + "\n" + node + "2," + node + "3", "r", "--", "true"}, "--nodes: node URL 1 of 2 has a line break"},
		{"nodes flag given twice", []string{"status", "--nodes", node + ",", "--nodes", node, "r"}, "duplicate node"},
		{"lock long name", []string{"lock", "--nodes", node, strings.Repeat("x", 1025), "--", "true"}, "1025 bytes long, over the limit of 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runDLM(t, 30*time.Second, nil, tt.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want %d saying %q; stderr: %s", r.code, exitUsage, tt.want, r.stderr)
			}
		})
	}
}

// TestHandleFileUnwritable: dlm acquire whose --handle-file cannot be
// written gives the lock back and exits 73, not 1, which is kept for
// failed checks.
func TestHandleFileUnwritable(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	for _, path := range []string{filepath.Join(dir, "missing", "h"), filepath.Join(dir, "h")} {
		if os.Geteuid() == 0 && !strings.Contains(path, "missing") {
			continue // root writes into a read-only directory
		}
		r := runDLM(t, 30*time.Second, nil, "acquire", "--nodes", strings.Join(c.URLs(), ","), "--node-timeout", "1s", "--handle-file", path, "res")
		if r.code != exitCantCreate || !strings.Contains(r.stderr, "--handle-file") {
			t.Errorf("--handle-file %s: exit %d, want %d naming --handle-file; stderr: %s", path, r.code, exitCantCreate, r.stderr)
		}
		redlocktest.Eventually(t, 5*time.Second, func() bool { return len(keysOn(c)) == 0 }, "the lock was not given back: keys %v", keysOn(c))
	}
}

// TestNodesListKeepsEveryNode: --nodes splits on commas only, given once
// or more, and a list with line breaks is refused in the flag as in
// DLM_NODES. Before, the flag read its value as one line of CSV: three
// URLs on three lines gave one node (and a quorum of 1), in silence.
func TestNodesListKeepsEveryNode(t *testing.T) {
	var v nodesValue
	for _, s := range []string{"redis://h:1, redis://h:2,", "redis://h:3"} {
		if err := v.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(v, "|"); got != "redis://h:1|redis://h:2|redis://h:3" {
		t.Errorf("--nodes twice gives %q", got)
	}
	multi := "redis://h:1\nredis://h:2\nredis://h:3"
	if err := v.Set(multi); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveNodes(v); err == nil || !strings.Contains(err.Error(), "--nodes: node URL 4 of 4 has a line break") {
		t.Errorf("--nodes on three lines: err = %v, want a refusal naming the line break", err)
	}
	t.Setenv(nodesEnv, multi)
	if _, err := resolveNodes(nil); err == nil || !strings.Contains(err.Error(), nodesEnv+": node URL 1 of 1 has a line break") {
		t.Errorf("%s on three lines: err = %v, want a refusal naming the line break", nodesEnv, err)
	}
	t.Setenv(nodesEnv, "redis://alice:s3cret@h:1\nredis://h:2")
	if _, err := resolveNodes(nil); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("err = %v: want a refusal that does not show the password", err)
	}
}
