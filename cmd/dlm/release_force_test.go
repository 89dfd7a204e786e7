package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestForceReleaseOfQuotedNames: dlm status shows a resource name it
// cannot print as is (control characters, invalid UTF-8, a leading quote)
// in Go's quoted form; dlm status RESOURCE and dlm release --force take
// that form back, so that an operator can inspect and release any lock
// status lists. A raw name with a control
// character is refused with the form to give; a malformed quoted form too.
// Found by review: `dlm release --force` refused every such name (64), and
// the quoted form was read as a literal name (exit 0, the lock still held).
func TestForceReleaseOfQuotedNames(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	holder, closeHolder, err := dial(defaultAdapter, c.URLs(), tlsFiles{}, 0, redlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeHolder)
	for _, name := range []string{"job\x1b[31m\nfake: free", "bad\xffutf8", `"quoted"`, "tab\there"} {
		l, err := holder.TryLock(t.Context(), name)
		if err != nil {
			t.Fatalf("lock %q: %v", name, err)
		}
		st := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "--all")
		shown := strconv.Quote(name)
		if !strings.Contains(st.stdout, "\n"+shown+": HELD for write") {
			t.Fatalf("%q: dlm status --all does not show it held as %s; stdout: %s", name, shown, st.stdout)
		}
		if st := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, shown); st.code != 0 || !strings.Contains(st.stdout, "\n"+shown+": HELD for write") {
			t.Errorf("dlm status %s: exit %d, want 0 and the lock held; stdout: %s; stderr: %s", shown, st.code, st.stdout, st.stderr)
		}
		r := runDLM(t, 30*time.Second, nil, "release", "--nodes", nodes, "--force", shown)
		if r.code != 0 {
			t.Errorf("release --force %s: exit %d, want 0; stderr: %s", shown, r.code, r.stderr)
		}
		if info, err := holder.Inspect(t.Context(), name); err != nil || info.Held() {
			t.Errorf("release --force %s: %q still held (%v)", shown, name, err)
		}
		if strings.Contains(r.stderr, l.Value()) || strings.Contains(r.stderr, "\x1b") || strings.Contains(r.stderr, "\xff") {
			t.Errorf("release --force %s printed the value or a raw control byte: %q", shown, r.stderr)
		}
	}
	for _, tc := range []struct{ arg, want string }{
		{"job\x1b[31m", `give its quoted form: "job\x1b[31m"`},
		{`"job`, "is read as the quoted form that dlm status prints"},
		{`""`, "the empty name"},
	} {
		r := runDLM(t, 30*time.Second, nil, "release", "--nodes", nodes, "--force", tc.arg)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("release --force %q: exit %d, stderr %q; want %d and %q", tc.arg, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}

// TestForceReleaseRefusals: dlm release --force tells an operator's
// mistakes instead of exiting 0. A free name (mistyped) exits 74, nothing
// was held. A quoted form that dlm status never prints ('"abc"', whose
// unquoted name abc prints as is) is refused as ambiguous (dlm lock takes
// '"abc"' as a name of its own), and the lock abc stays held. A key prefix
// that reaches dlm's other keys (fence counters, leaders' records, owner
// notes) is refused, so that no counter is deleted and no token goes back.
// Failed before: the free name exited 0; '"abc"' released abc (exit 0);
// --key-prefix dlm:fence: deleted the fence counter of x (exit 0).
func TestForceReleaseRefusals(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	holder, closeHolder, err := dial(defaultAdapter, c.URLs(), tlsFiles{}, 0, redlock.WithTTL(time.Minute), redlock.WithFencing())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeHolder)
	for _, name := range []string{"abc", "x"} {
		if _, err := holder.TryLock(t.Context(), name); err != nil {
			t.Fatalf("lock %q: %v", name, err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"free name", []string{"--force", "no-such-lock"}, exitLockLost, `"no-such-lock" was not held`},
		{"quoted plain name", []string{"--force", `"abc"`}, exitUsage, `give abc`},
		{"fence prefix", []string{"--force", "--key-prefix", redlock.DefaultFencePrefix, "x"}, exitUsage, "fence"},
		{"prefix of the fence prefix", []string{"--force", "--key-prefix", "dlm:", "fence:x"}, exitUsage, "fence"},
		{"record prefix", []string{"--force", "--key-prefix", redlock.DefaultRecordPrefix, "x"}, exitUsage, "record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runDLM(t, 30*time.Second, nil, append([]string{"release", "--nodes", nodes}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.want)
			}
		})
	}
	for _, name := range []string{"abc", "x"} {
		if info, err := holder.Inspect(t.Context(), name); err != nil || !info.Held() {
			t.Errorf("%q is no longer held (%v)", name, err)
		}
	}
	for i, s := range c.Servers {
		if n, err := s.Client().Exists(t.Context(), redlock.DefaultFencePrefix+"x").Result(); err != nil || n != 1 {
			t.Errorf("node %d: the fence counter of x is gone (%v)", i+1, err)
		}
	}
}
