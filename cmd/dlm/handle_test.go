package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// runDLMIn is runDLM with stdin as the process's standard input.
func runDLMIn(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd, stdout, stderr := dlmCmd(t, env, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return finishDLM(t, cmd, stdout, stderr, 30*time.Second, args)
}

// heldByQuorum reports whether a majority of the servers hold value under
// resource and none holds another value: what a granted lock leaves. Not
// every server: a lock is granted once a majority said yes, and a request
// that did not reach its node within the node timeout is dropped (a
// loaded machine, where the fresh dlm process dials and checks each node
// as it starts): dlm acquire then exits with the lock on a majority only
// ("every node holds the caller's value" not met within 10s, at load 28).
func heldByQuorum(t *testing.T, c *redlocktest.Cluster, resource, value string) bool {
	held := 0
	for _, v := range c.MustValues(redlock.DefaultKeyPrefix + resource) {
		switch v {
		case value:
			held++
		case "":
		default:
			return false
		}
	}
	return held > len(c.Servers)/2
}

// mustParse reads a handle printed by dlm.
func mustParse(t *testing.T, text string) redlock.Handle {
	t.Helper()
	h, err := redlock.ParseHandle(text)
	if err != nil {
		t.Fatalf("dlm printed %d bytes that are not a handle: %v", len(text), err)
	}
	return h
}

// noSecret fails when out holds the handle's value.
func noSecret(t *testing.T, what, out string, h redlock.Handle) {
	t.Helper()
	if strings.Contains(out, h.Value) {
		t.Errorf("%s prints the lock's value: %s", what, out)
	}
}

// A CI pipeline's three steps, as three dlm processes: acquire, extend
// (the handle on standard input), release (the handle in a file); a forged
// handle releases nothing; a spent or expired handle says so (exit 74).
func TestHandleCommands(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	env := []string{nodesEnv + "=" + strings.Join(c.URLs(), ",")}
	common := []string{"--node-timeout", "1s"}
	dlm := func(stdin string, extraEnv []string, args ...string) result {
		return runDLMIn(t, stdin, append(append([]string(nil), env...), extraEnv...), append(args, common...)...)
	}

	r := dlm("", nil, "acquire", "--ttl", "20s", "deploy")
	if r.code != 0 {
		t.Fatalf("acquire: exit %d; stderr: %s", r.code, r.stderr)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("acquire printed %d lines, want the handle alone", strings.Count(r.stdout, "\n"))
	}
	h := mustParse(t, r.stdout)
	if h.Resource != "deploy" || h.TTL != 20*time.Second || time.Until(h.Until) < 10*time.Second {
		t.Errorf("handle of deploy: %v, ttl %v", h, h.TTL)
	}
	noSecret(t, "acquire's stderr", r.stderr, h)
	redlocktest.Eventually(t, 10*time.Second, func() bool { return heldByQuorum(t, c, "deploy", h.Value) },
		"the lock outlives dlm acquire on a majority of the nodes: %q", c.MustValues(redlock.DefaultKeyPrefix+"deploy"))

	if r := dlm("", nil, "acquire", "deploy"); r.code != exitNotAcquired || !strings.Contains(r.stderr, "held elsewhere") {
		t.Errorf("second acquire: exit %d, want %d (held elsewhere); stderr: %s", r.code, exitNotAcquired, r.stderr)
	}

	text, _ := h.MarshalText()
	r = dlm(string(text)+"\n", nil, "extend", "--ttl", "1m", "-")
	if r.code != 0 {
		t.Fatalf("extend -: exit %d; stderr: %s", r.code, r.stderr)
	}
	h2 := mustParse(t, r.stdout)
	if h2.Value != h.Value || h2.TTL != time.Minute || h2.Extensions != 1 || time.Until(h2.Until) < 50*time.Second {
		t.Errorf("extended handle: ttl %v, %d extensions, %v left; want the same value, 1m, 1, about 1m", h2.TTL, h2.Extensions, time.Until(h2.Until))
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		extended := 0
		for _, s := range c.Servers {
			if ttl, _, _ := s.Inspector().TTL(t.Context(), redlock.DefaultKeyPrefix+"deploy"); ttl >= 50*time.Second {
				extended++
			}
		}
		return extended > len(c.Servers)/2
	}, "the keys of a majority of the nodes extended to 1m")

	forged := h2
	forged.Value = "forged-0123456789abcdefgh"
	ftext, _ := forged.MarshalText()
	r = dlm("", []string{handleEnv + "=" + string(ftext)}, "release")
	if r.code != exitLockLost || !strings.Contains(r.stderr, "no longer holds its value") {
		t.Errorf("release of a forged handle: exit %d, want %d saying the value is not held; stderr: %s", r.code, exitLockLost, r.stderr)
	}
	noSecret(t, "release's stderr", r.stderr, forged)
	if !heldByQuorum(t, c, "deploy", h.Value) {
		t.Errorf("a forged handle released the lock: %q", c.MustValues(redlock.DefaultKeyPrefix+"deploy"))
	}

	file := filepath.Join(t.TempDir(), "deploy.lock")
	text, _ = h2.MarshalText()
	if err := os.WriteFile(file, text, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := dlm("", nil, "release", "--handle-file", file); r.code != 0 || r.stdout != "" {
		t.Errorf("release: exit %d, stdout %q, want 0 and nothing; stderr: %s", r.code, r.stdout, r.stderr)
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool { return len(keysOn(c)) == 0 }, "every key released: %v", keysOn(c))
	if r := dlm("", nil, "release", "--handle-file", file); r.code != exitLockLost || !strings.Contains(r.stderr, "no longer holds") {
		t.Errorf("second release: exit %d, want %d; stderr: %s", r.code, exitLockLost, r.stderr)
	}
}

// An expired handle: dlm extend exits 74 and says when it expired, and
// re-creates no key; --json and --handle-file round trip.
func TestHandleExpired(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	env := []string{nodesEnv + "=" + strings.Join(c.URLs(), ",")}
	file := filepath.Join(t.TempDir(), "h")
	// A node timeout a loaded machine meets, and a ttl that outlives it
	// (with 200ms and 700ms, every node timed out under load).
	r := runDLM(t, 30*time.Second, env, "acquire", "--node-timeout", "2s", "--ttl", "5s", "--handle-file", file, "--json", "short")
	if r.code != 0 {
		t.Fatalf("acquire --handle-file: exit %d; stderr: %s", r.code, r.stderr)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("handle file mode %v, want 0600", st.Mode().Perm())
	}
	var out struct {
		Handle, Resource, Until, TTL string
		Token                        uint64
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Resource != "short" || out.TTL != "5s" || out.Handle != "" {
		t.Fatalf("--json with --handle-file: %v, %+v; want the resource and ttl, and the handle in the file only", err, out)
	}
	b, _ := os.ReadFile(file)
	h := mustParse(t, string(b))
	if until, err := time.Parse(time.RFC3339Nano, out.Until); err != nil || !until.Equal(h.Until) {
		t.Errorf("--json until %q, want the handle's %v", out.Until, h.Until)
	}
	redlocktest.Eventually(t, 60*time.Second, func() bool { return len(keysOn(c)) == 0 && time.Now().After(h.Until) },
		"the lock expires with its ttl")
	r = runDLM(t, 30*time.Second, env, "extend", "--node-timeout", "2s", "--handle-file", file)
	if r.code != exitLockLost || !strings.Contains(r.stderr, "validity ended at") {
		t.Errorf("extend of an expired handle: exit %d, want %d saying when it ended; stderr: %s", r.code, exitLockLost, r.stderr)
	}
	noSecret(t, "extend's stderr", r.stderr, h)
	if k := keysOn(c); len(k) != 0 {
		t.Errorf("an extension of an expired lock re-created keys: %v", k)
	}
	if b2, _ := os.ReadFile(file); string(b2) != string(b) {
		t.Error("a failed extend replaced the handle file")
	}
}

// Bad usage of the handle commands: exit 64 with the reason, before any
// node is asked, and never the handle's value in the message.
func TestHandleUsage(t *testing.T) {
	t.Parallel()
	good := "redis://127.0.0.1:1"
	h := redlock.Handle{Resource: "r", Value: "v-0123456789abcdef-secret", Until: time.Now(), TTL: time.Minute, KeyPrefix: redlock.DefaultKeyPrefix}
	text, err := h.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "h")
	if err := os.WriteFile(file, text, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		env   []string
		stdin string
		args  []string
		want  string
	}{
		{"release no handle", nil, "", []string{"release", "--nodes", good}, "no handle: give HANDLE"},
		{"release damaged", nil, "", []string{"release", "--nodes", good, "dlm1.xyz"}, "HANDLE: redlock: invalid argument: handle: damaged"},
		{"release not a handle on stdin", nil, "hello\n", []string{"release", "--nodes", good, "-"}, "standard input: redlock: invalid argument: handle: not a lock handle"},
		{"release empty env", []string{handleEnv + "="}, "", []string{"release", "--nodes", good}, "$DLM_HANDLE: redlock: invalid argument: handle: not a lock handle"},
		{"release twice", nil, "", []string{"release", "--nodes", good, "--handle-file", file, string(text)}, "not both"},
		{"release two handles", nil, "", []string{"release", "--nodes", good, string(text), string(text)}, "at most one HANDLE"},
		{"release missing file", nil, "", []string{"release", "--nodes", good, "--handle-file", filepath.Join(dir, "none")}, "--handle-file: open"},
		{"release other prefix", nil, "", []string{"release", "--nodes", good, "--key-prefix", "x:", "--handle-file", file}, `the handle's lock was acquired with key prefix "dlm:lock:"`},
		{"release no nodes", nil, "", []string{"release", "--handle-file", file}, "no nodes"},
		{"extend negative ttl", nil, "", []string{"extend", "--nodes", good, "--ttl", "-1s", "--handle-file", file}, "--ttl must be positive"},
		{"extend ttl too long", nil, "", []string{"extend", "--nodes", good, "--ttl", "25h", "--handle-file", file}, "over the limit of 24h"},
		{"extend node timeout over ttl", nil, "", []string{"extend", "--nodes", good, "--node-timeout", "2m", "--handle-file", file}, "--node-timeout must be well under the ttl 1m0s"},
		{"acquire no resource", nil, "", []string{"acquire", "--nodes", good}, "no RESOURCE"},
		{"acquire owner with value-env", []string{"V=a-value-of-the-callers-0123456789"}, "", []string{"acquire", "--nodes", good, "--value-env", "V", "--owner", "me", "a"}, "--owner has no effect with --value-env"},
		{"acquire empty resource", nil, "", []string{"acquire", "--nodes", good, "a", ""}, "RESOURCE 2 of 2 is empty"},
		{"acquire duplicate resource", nil, "", []string{"acquire", "--nodes", "redis://127.0.0.1:1", "--node-timeout", "10ms", "a", "a"}, `"a" is given twice`},
		{"acquire ttl 0", nil, "", []string{"acquire", "--nodes", good, "--ttl", "0", "r"}, "--ttl must be positive"},
		{"acquire value env unset", nil, "", []string{"acquire", "--nodes", good, "--value-env", "DLM_TEST_UNSET", "r"}, `"DLM_TEST_UNSET" is not set`},
		{"acquire no nodes", nil, "", []string{"acquire", "r"}, "no nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runDLMIn(t, tt.stdin, tt.env, tt.args...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not contain the reason %q", r.stderr, tt.want)
			}
			noSecret(t, "stderr", r.stderr, h)
		})
	}
}

// A value of the caller's, from an environment variable: refused when it
// is too short, used when it is good, and never printed.
func TestAcquireValueEnv(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	env := []string{nodesEnv + "=" + strings.Join(c.URLs(), ","), "MY_LOCK_VALUE=short", "MY_GOOD_VALUE=pipeline-4711-Zq8rT2vXk9LmW3"}
	r := runDLM(t, 30*time.Second, env, "acquire", "--node-timeout", "1s", "--value-env", "MY_LOCK_VALUE", "job")
	if r.code != exitUsage || !strings.Contains(r.stderr, "at least 16") {
		t.Errorf("short value: exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
	}
	if k := keysOn(c); len(k) != 0 {
		t.Errorf("a refused value left keys: %v", k)
	}
	r = runDLM(t, 30*time.Second, env, "acquire", "--node-timeout", "1s", "--value-env", "MY_GOOD_VALUE", "--json", "job")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr: %s", r.code, r.stderr)
	}
	var out struct{ Handle string }
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("--json: %v", err)
	}
	if h := mustParse(t, out.Handle); h.Value != "pipeline-4711-Zq8rT2vXk9LmW3" {
		t.Errorf("handle value %q, want the caller's", h.Value)
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool { return heldByQuorum(t, c, "job", "pipeline-4711-Zq8rT2vXk9LmW3") },
		"a majority of the nodes hold the caller's value")
	if r := runDLMIn(t, out.Handle, env, "release", "--node-timeout", "1s", "-"); r.code != 0 {
		t.Errorf("release -: exit %d; stderr: %s", r.code, r.stderr)
	}
}

// Several resources under one handle: dlm acquire b a locks both as one,
// dlm lock on either is refused, dlm release frees both.
func TestHandleSet(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	env := []string{nodesEnv + "=" + strings.Join(c.URLs(), ",")}
	r := runDLM(t, 30*time.Second, env, "acquire", "--node-timeout", "1s", "--ttl", "30s", "b", "a")
	if r.code != 0 {
		t.Fatalf("acquire b a: exit %d; stderr: %s", r.code, r.stderr)
	}
	text := r.stdout
	h := mustParse(t, text)
	if h.Resource != "a,b" || len(h.Resources) != 2 {
		t.Errorf("handle names %q (%q), want the set a,b", h.Resource, h.Resources)
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		return heldByQuorum(t, c, "a", h.Value) && heldByQuorum(t, c, "b", h.Value)
	}, "both keys on a majority of the nodes")
	if r := runDLM(t, 30*time.Second, env, "lock", "--node-timeout", "1s", "b", "--", "true"); r.code != exitNotAcquired {
		t.Errorf("dlm lock b under the set: exit %d, want %d; stderr: %s", r.code, exitNotAcquired, r.stderr)
	}
	if r := runDLMIn(t, text, env, "release", "--node-timeout", "1s", "-"); r.code != 0 {
		t.Fatalf("release -: exit %d; stderr: %s", r.code, r.stderr)
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool { return len(keysOn(c)) == 0 }, "every key of the set released: %v", keysOn(c))
}

// The handle is printed byte for byte, past the redaction of passwords:
// every handle starts with "dlm1.eyJyZXNv" (base64 of `{"reso`), and a
// node password "eyJyZXNv" known to the redactor (from DLM_NODES, which
// --nodes overrides) replaced it in the handle, which could then never be
// parsed, and its lock never released, before the fix.
func TestAcquireHandleNotRedacted(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	env := []string{nodesEnv + "=redis://:eyJyZXNv@127.0.0.1:1"}
	r := runDLM(t, 30*time.Second, env, "acquire", "--nodes", strings.Join(c.URLs(), ","), "--node-timeout", "1s", "deploy")
	if r.code != 0 {
		t.Fatalf("acquire: exit %d; stderr: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "dlm1.eyJyZXNv") {
		t.Errorf("handle %.20q...: redacted where it contains a password", r.stdout)
	}
	mustParse(t, r.stdout)
	if r := runDLMIn(t, r.stdout, nil, "release", "--nodes", strings.Join(c.URLs(), ","), "--node-timeout", "1s", "-"); r.code != 0 {
		t.Errorf("release: exit %d; stderr: %s", r.code, r.stderr)
	}
}
