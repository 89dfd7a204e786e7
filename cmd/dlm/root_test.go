package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dlm/checker/torture"
	"dlm/redlock"
)

// TestVersion: dlm --version prints one line, "dlm VERSION GOVERSION", and
// exits 0. Failed before: unknown flag --version (64).
func TestVersion(t *testing.T) {
	t.Parallel()
	r := runDLM(t, 30*time.Second, nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "dlm ") || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("dlm --version: exit %d, stdout %q, stderr %q; want 0 and one line \"dlm VERSION GOVERSION\"", r.code, r.stdout, r.stderr)
	}
}

// TestErrorLine: an error is printed on one line, with a package's prefix
// once. Failed before: "dlm: redlock: ... redlock: lock not held" and the
// nodes' errors on lines of their own.
func TestErrorLine(t *testing.T) {
	err := fmt.Errorf("release of \"x\": %w", errors.Join(redlock.ErrNotHeld, errors.New("redlock: node a: refused"), errors.New("node b: timeout")))
	got := errorLine(err)
	if strings.Contains(got, "\n") || strings.Count(got, "redlock: ") != 1 {
		t.Errorf("errorLine = %q, want one line with one \"redlock: \"", got)
	}
	for _, want := range []string{"lock not held", "node a: refused", "node b: timeout"} {
		if !strings.Contains(got, want) {
			t.Errorf("errorLine = %q, lacks %q", got, want)
		}
	}
}

// TestErrorLineInvalid: a setting the library refuses is printed after
// "dlm: " with no second prefix. Failed before: "redlock: invalid argument:
// ttl 30s is over the max ttl 5s ...", printed as "dlm: redlock: invalid
// argument: ...".
func TestErrorLineInvalid(t *testing.T) {
	err := fmt.Errorf("%w: ttl 30s is over the max ttl 5s that node a advertises", redlock.ErrInvalid)
	if got, want := errorLine(err), "ttl 30s is over the max ttl 5s that node a advertises"; got != want {
		t.Errorf("errorLine = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("HANDLE: %w", err) // a prefix of dlm's own stays
	if got := errorLine(wrapped); !strings.HasPrefix(got, "HANDLE: ") {
		t.Errorf("errorLine = %q, want it to start with HANDLE: ", got)
	}
}

// TestReplayLine: dlm torture's replay line names the adapter, also the
// library's default (goredis), which is not dlm's (rueidis). Failed
// before: "--adapter goredis" was left out, so the replay ran rueidis.
func TestReplayLine(t *testing.T) {
	for _, a := range []string{"goredis", "rueidis", ""} {
		cfg := torture.DefaultConfig("random")
		cfg.Adapter = a
		want := a
		if want == "" {
			want = torture.DefaultAdapter
		}
		if got := replayLine(cfg); !strings.Contains(got, " --adapter "+want) || strings.Count(got, "--adapter") != 1 {
			t.Errorf("replayLine with adapter %q = %q, want one --adapter %s", a, got, want)
		}
	}
}
