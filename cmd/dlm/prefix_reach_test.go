package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Found by an independent review: a lock key prefix that reaches dlm's
// own keys, and a fence key's content in an error.

// TestHandleCannotReachFenceKeys: a fence key's value is its token,
// which is no secret (DLM_LOCK_TOKEN, the store's records). A handle that
// names the fence prefix and carries a token as its value must be refused
// by dlm release and dlm extend, as dlm release --force refuses that
// prefix; otherwise the fence counter is deleted (or given an expiry) and
// the next token goes back.
func TestHandleCannotReachFenceKeys(t *testing.T) {
	// In parallel: it has no bound of its own, only six dlm runs one after
	// the other (14.6 s of the serial part of a make test at load 30).
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	token := func() uint64 {
		t.Helper()
		r := runDLM(t, 30*time.Second, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "--fencing", "fz", "--", "sh", "-c", `echo "$DLM_LOCK_TOKEN"`)
		if r.code != 0 {
			t.Fatalf("lock --fencing: exit %d: %s", r.code, r.stderr)
		}
		tok, err := strconv.ParseUint(strings.TrimSpace(r.stdout), 10, 64)
		if err != nil {
			t.Fatalf("token %q: %v", r.stdout, err)
		}
		return tok
	}
	token() // the first grant repairs the nodes: its token is the floor
	token()
	first := token() // counted up from the floor
	h := redlock.Handle{Resource: "fz", Resources: []string{"fz"}, Value: strconv.FormatUint(first, 10),
		Until: time.Now().Add(time.Hour), TTL: 20 * time.Second, KeyPrefix: redlock.DefaultFencePrefix}
	text, err := h.MarshalText()
	if err != nil {
		t.Fatalf("the token %d is no valid handle value (%v): the attack needs 16 bytes", first, err)
	}
	for _, op := range []string{"extend", "release"} {
		r := runDLM(t, 30*time.Second, []string{"DLM_HANDLE=" + string(text)}, op, "--nodes", nodes, "--key-prefix", redlock.DefaultFencePrefix)
		if r.code != exitUsage {
			t.Errorf("dlm %s of a handle with key prefix %q: exit %d, want %d (refused); stderr %q", op, redlock.DefaultFencePrefix, r.code, exitUsage, r.stderr)
		}
	}
	if next := token(); next <= first {
		t.Errorf("tokens did not increase: %d, then %d", first, next)
	}
}

// TestFenceValueNotPrinted: a lock key prefix that reaches the fence
// counters is refused, and a fence key that holds no number (an
// application's key that collides, or another lock's value) is named in
// the error, never quoted: what it holds may be a secret.
func TestFenceValueNotPrinted(t *testing.T) {
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	r := runDLM(t, 30*time.Second, nil, "acquire", "--nodes", nodes, "--ttl", "20s", "--key-prefix", redlock.DefaultFencePrefix, "x")
	if r.code != exitUsage {
		t.Errorf("acquire --key-prefix %q: exit %d, want %d; stderr %q", redlock.DefaultFencePrefix, r.code, exitUsage, r.stderr)
	}
	const secret = "s3cret-NU1vtx_Gpk0AmdLvUhMiP3uf"
	for _, s := range c.Servers {
		if err := s.Client().Set(t.Context(), redlock.DefaultFencePrefix+"x", secret, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, adapter := range []string{"goredis", "rueidis"} {
		r = runDLM(t, 30*time.Second, nil, "lock", "--adapter", adapter, "--nodes", nodes, "--fencing", "x", "--", "true")
		if r.code == 0 || strings.Contains(r.stderr, secret) || !strings.Contains(r.stderr, "fence counter") {
			t.Errorf("%s: a fence key holding a secret: exit %d, stderr %q; want a failure that names the key and not its content", adapter, r.code, r.stderr)
		}
	}
}
