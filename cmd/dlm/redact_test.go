package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"dlm/redlock/redlocktest"
)

// testPassword is the password of the URLs in TestNoPasswordPrinted.
const testPassword = "s3cr3tPW"

// TestNoPasswordPrinted runs every error path that quotes or dials a node
// URL, in every subcommand that takes node URLs, and greps all the output
// for the password. The last case shows that the
// command dlm lock runs does not inherit DLM_NODES.
func TestNoPasswordPrinted(t *testing.T) {
	t.Parallel()
	srv := redlocktest.StartServer(t)
	// Set after the start: the helper's readiness PING has no password.
	if err := srv.Client().ConfigSet(t.Context(), "requirepass", "other-password").Err(); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: refused at once.
	closed := redlocktest.RefusingAddr(t)
	pw := testPassword
	u := func(hostport string) string { return "redis://user:" + pw + "@" + hostport }
	wrongPW := u(srv.Addr())
	refused := u(closed)
	badURLs := []struct{ name, url string }{
		{"bad port", u("127.0.0.1:99999")},
		{"bad db", u("127.0.0.1:1/x")},
		{"unknown scheme", "http://user:" + pw + "@127.0.0.1:1"},
		{"parse error", "redis://user:" + pw + "@[::1"},
		{"password only", "redis://" + pw + "@127.0.0.1:99999"},
		{"empty host", "redis://user:" + pw + "@:7601"},
		{"percent-encoded", "redis://user:" + pw + "%21@127.0.0.1:99999"},
		// shapes a review found
		{"no scheme", "user:" + pw + "@127.0.0.1:1"},
		{"one slash", "redis:/user:" + pw + "@127.0.0.1:1"},
		{"slash in password", "redis://user:" + pw + "/x@127.0.0.1:1"},
		{"question mark in password", "redis://user:" + pw + "?x@127.0.0.1:1"},
		{"hash in password", "redis://user:" + pw + "#x@127.0.0.1:1"},
	}
	type tc struct {
		name string
		env  []string
		args []string
	}
	var tests []tc
	for _, b := range badURLs {
		tests = append(tests,
			tc{"lock " + b.name, nil, []string{"lock", "--nodes", b.url, "r", "--", "true"}},
			tc{"lock env " + b.name, []string{nodesEnv + "=" + b.url}, []string{"lock", "r", "--", "true"}},
			tc{"status " + b.name, nil, []string{"status", "--nodes", b.url}},
			tc{"doctor " + b.name, nil, []string{"doctor", "--nodes", b.url}},
			tc{"doctor env " + b.name, []string{nodesEnv + "=" + b.url}, []string{"doctor"}},
			tc{"leader " + b.name, nil, []string{"leader", "--nodes", b.url, "svc"}},
			tc{"bench " + b.name, nil, []string{"bench", "--nodes", b.url}},
			tc{"demo " + b.name, nil, []string{"demo", "--no-tui", "--nodes", b.url}},
		)
	}
	tests = append(tests,
		tc{"lock duplicate", nil, []string{"lock", "--nodes", refused + "," + refused, "r", "--", "true"}},
		tc{"lock refused", nil, []string{"lock", "--node-timeout", "300ms", "--nodes", refused, "r", "--", "true"}},
		tc{"lock wrong password", nil, []string{"lock", "--node-timeout", "1s", "--nodes", wrongPW, "r", "--", "true"}},
		tc{"status refused", nil, []string{"status", "--timeout", "500ms", "--nodes", refused + "," + wrongPW, "r"}},
		tc{"doctor refused", nil, []string{"doctor", "--timeout", "500ms", "--nodes", refused + "," + wrongPW}},
		tc{"bench refused", nil, []string{"bench", "--duration", "100ms", "--nodes", refused}},
		tc{"bench wrong password", nil, []string{"bench", "--duration", "100ms", "--nodes", wrongPW}},
		tc{"demo refused", nil, []string{"demo", "--no-tui", "--duration", "2s", "--nodes", refused}},
		tc{"lock child env", []string{nodesEnv + "=" + u(srv.Addr())}, []string{"lock", "--nodes", "redis://:other-password@" + srv.Addr(), "--node-timeout", "1s", "r", "--", "env"}},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runDLM(t, 30*time.Second, tt.env, tt.args...)
			if tt.name != "lock child env" && r.code == 0 {
				t.Errorf("exit 0, want an error; stdout: %s", r.stdout)
			}
			if strings.Contains(r.stdout+r.stderr, pw) {
				t.Errorf("the password is printed (exit %d):\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if tt.name == "lock child env" && strings.Contains(r.stdout, nodesEnv+"=") {
				t.Errorf("the command inherited %s:\n%s", nodesEnv, r.stdout)
			}
		})
	}
}

// TestRedact checks the one redaction on its own.
func TestRedact(t *testing.T) {
	r := newRedactor([]string{"--nodes", "redis://u:pa%2Fss@h:1,rediss://solo-secret@h:2"})
	tests := []struct{ in, want string }{
		{"dial redis://u:pa%2Fss@h:1: refused", "dial redis://u:xxxxx@h:1: refused"},
		{`node URL "rediss://solo-secret@h:2" bad`, `node URL "rediss://xxxxx@h:2" bad`},
		{"dial redis://u:pa/ss@h:1 (decoded)", "dial redis://u:xxxxx@h:1 (decoded)"},
		{"decoded pa/ss in prose is no credential", "decoded pa/ss in prose is no credential"},
		{"unix:///tmp/sock and redis://h:1 stay", "unix:///tmp/sock and redis://h:1 stay"},
		{"redis://a:b@c@h:1", "redis://a:xxxxx@h:1"},
		{"usage: redis://[user:password@]host:port", "usage: redis://[user:password@]host:port"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// urlSpecials are the characters that mean something in a URL, and the
// quote and backslash that %q escapes.
const urlSpecials = ` :/?#[]@!$&'()*+,;=%"\`

// nodeForms are the ways a node URL with a password is written, right or
// wrong: PW stands for the password.
var nodeForms = []string{
	"redis://alice:PW@127.0.0.1:7000",
	"redis:/alice:PW@127.0.0.1:7000",
	"alice:PW@127.0.0.1:7000",
	"rediss://PW@127.0.0.1:7000/0",
	"redis://alice:PW@127.0.0.1:7000?db=1",
}

// printedAbout returns what dlm prints about the node URL raw: the errors
// of the node list (given as one flag value, and split at commas as
// --nodes and DLM_NODES split it), the node's name, and the URL itself
// quoted by a message.
func printedAbout(raw string) string {
	var b strings.Builder
	for _, list := range [][]string{{raw}, strings.Split(raw, ",")} {
		parsed, err := resolveParsedNodes(list)
		if err != nil {
			b.WriteString(err.Error() + "\n")
		}
		for _, n := range parsed {
			b.WriteString(n.String() + "\n")
		}
	}
	fmt.Fprintf(&b, "node %s, %q\n", raw, raw)
	return b.String()
}

// FuzzRedactNodePassword: whatever characters a password holds, none of
// the ways dlm prints a node URL shows it once redacted. The seeds put every URL-special character in a password, in every
// form of nodeForms, given as --nodes and as DLM_NODES. The count compares
// with a neutral password, so that a password that happens to be a word
// of the message ("7000") is not a leak, and every URL printed must show
// "xxxxx" before its host.
func FuzzRedactNodePassword(f *testing.F) {
	for i, c := range urlSpecials {
		f.Add("pa"+string(c)+"ss"+string(c)+"wd", uint8(i))
		f.Add("p"+string(c)+"w", uint8(i+1))
	}
	// A comma together with ":", "\" or a quote, in every form: a usage
	// error printed such passwords (found by fuzzing, 10 of 500).
	for i := range nodeForms {
		for _, pw := range []string{"pa,ss:wd", `pa,ss\wd`, `pa,ss"wd`, "p:a,s\"s", ",:pw,:"} {
			f.Add(pw, uint8(i))
		}
	}
	f.Add("pa/ss?w#rd@x", uint8(0))
	f.Add("s3cr3t%2F", uint8(2))
	f.Fuzz(func(t *testing.T, pw string, form uint8) {
		if pw == "" || !utf8.ValidString(pw) || strings.IndexFunc(pw, unicode.IsSpace) >= 0 || strings.IndexFunc(pw, unicode.IsControl) >= 0 {
			t.Skip("a password with spaces or control characters is not one a URL can carry")
		}
		shape := nodeForms[int(form)%len(nodeForms)]
		if strings.HasPrefix(shape, "rediss://PW@") && strings.Contains(pw, ":") {
			t.Skip("in the password-only form, a colon makes what precedes it the user name, not a password")
		}
		raw := strings.Replace(shape, "PW", pw, 1)
		// The neutral password parses as pw does (the same special
		// characters, letters and digits as Z), so that its messages are
		// pw's but for the password; where it holds pw itself (pw has no
		// letter or digit) the count says nothing, and the user
		// information checks below hold alone.
		npw := strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return 'Z'
			}
			return r
		}, pw)
		neutral := strings.Replace(shape, "PW", npw, 1)
		for _, words := range [][]string{{"--nodes", raw}, {"--nodes=" + raw}} {
			r, rn := newRedactorOf(words), newRedactorOf([]string{"--nodes", neutral})
			out, base := r.String(printedAbout(raw)), rn.String(printedAbout(neutral))
			if !strings.Contains(npw, pw) && strings.Count(out, pw) > strings.Count(base, pw) {
				t.Fatalf("password %q of %q is printed:\n%s", pw, raw, out)
			}
			if n, m := strings.Count(out, "@127.0.0.1:7000"), strings.Count(out, "xxxxx@127.0.0.1:7000"); n != m {
				t.Fatalf("%d of the %d URLs of %q printed keep their password:\n%s", n-m, n, raw, out)
			}
			if in := "alice:" + pw + "@"; strings.Contains(out, in) || strings.Contains((*redactor)(nil).String(raw), in) {
				t.Fatalf("the user information of %q is printed:\n%s", raw, out)
			}
		}
	})
}

// TestRedactOnlyCredentials: the redaction touches URL credentials and
// nothing else: a resource name, an owner label or an order such as
// backup@db1:5432 or attack@06:00 (a user, no password) is printed as is,
// inside JSON too, while every password of a URL is still hidden. Failed
// before: "backup@db1:5432" printed as "xxxxx@db1:5432", and
// {"decision":"attack@06:00"} became invalid JSON.
func TestRedactOnlyCredentials(t *testing.T) {
	r := newRedactor([]string{"--nodes", "redis://u:Sekr3t@h:1"})
	for _, s := range []string{
		"backup@db1:5432",
		`lock "backup@db1:5432" held by "ops@host:22"`,
		"decision attack@06:00",
		`{"decision":"attack@06:00","order":"retreat@18:30"}`,
		`"lieutenant 2":"attack@06:00"`,
		"mail alice@example.com",
		// A name:detail@place that names no port is no node URL (dlm's
		// node URLs carry a scheme; the library quotes an invalid one
		// redacted already): a resource, an owner label, an order or an
		// interactive value.
		`lock "tenant:42@eu-west" held`,
		"decision hold:north@0600",
		`{"vectors":{"0":["gps:51.5@12","east"]}}`,
		"    \"gps:51.5@12\",\n",
	} {
		if got := r.String(s); got != s {
			t.Errorf("redact(%q) = %q, want it unchanged", s, got)
		}
		if got := (*redactor)(nil).String(s); got != s {
			t.Errorf("nil redactor: redact(%q) = %q, want it unchanged", s, got)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"node redis://u:Sekr3t@h:1 down", "node redis://u:xxxxx@h:1 down"},
		{"node alice:pw0rd@h:1 down", "node alice:xxxxx@h:1 down"},
		{`node "alice:pw0rd@[::1]:7000/0"`, `node "alice:xxxxx@[::1]:7000/0"`},
		{"node (alice:pw0rd@db1.example:6379).", "node (alice:xxxxx@db1.example:6379)."},
		{"node redis:/alice:pw0rd@h:1 down", "node redis:/alice:xxxxx@h:1 down"},
		{`{"node":"rediss://:pw0rd@h:1/0"}`, `{"node":"rediss://:xxxxx@h:1/0"}`},
	} {
		if got := (*redactor)(nil).String(tt.in); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// The words of the command line are no node URLs either when they
	// read as name:detail@place without a port: an order, interactive
	// values, a resource.
	args := []string{"generals", "--interactive", "--values", "gps:51.5@12,east", "--order", "hold:north@0600", "tenant:42@eu-west"}
	for _, s := range []string{"decision hold:north@0600", `    "gps:51.5@12",`, `lock "tenant:42@eu-west" held`} {
		if got := newRedactor(args).String(s); got != s {
			t.Errorf("with arguments %q: redact(%q) = %q, want it unchanged", args, s, got)
		}
	}
	// An argument shaped like an order, not a URL, is no password: dlm
	// generals --order attack@06:00 printed its decisions as xxxxx@06:00.
	orderArgs := newRedactor([]string{"generals", "--order", "attack@06:00", "--owner=backup@db1:5432"})
	for _, s := range []string{"decision attack@06:00", `{"order":"attack@06:00"}`, "owner backup@db1:5432"} {
		if got := orderArgs.String(s); got != s {
			t.Errorf("with those arguments, redact(%q) = %q, want it unchanged", s, got)
		}
	}
	var j struct{ Decision string }
	out := r.String(`{"decision":"attack@06:00"}`)
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.Decision != "attack@06:00" {
		t.Errorf("redacted JSON %q: %v, decision %q", out, err, j.Decision)
	}
}

// TestRedactCommonWordPassword: a node password that is a common word
// (true, ok, node, held) is hidden where it is a credential (in the node's
// URL, whole or cut at a comma, quoted, and in the port that Go's URL
// parser quotes), and nowhere else: the word stays in JSON, in status
// lines and in free text. Failed before: with the password "true",
// {"held":true} printed as {"held":xxxxx} and "true" in any message as
// "xxxxx"; a password of under four characters ("ok") was hidden only
// where a whole URL was printed.
func TestRedactCommonWordPassword(t *testing.T) {
	for _, pw := range []string{"true", "ok", "node", "held"} {
		t.Run(pw, func(t *testing.T) {
			r := newRedactor([]string{"--nodes", "redis://alice:" + pw + "@h:1,rediss://" + pw + "@h:2,redis://:" + pw + "@h:3"})
			for _, s := range []string{
				`{"held":true,"ok":true,"node":"redis://h:1"}`,
				"lock held: true; node ok",
				"held=true ok=true node h:1",
				"the node is ok, true to its word; held",
				"truest okay nodes withheld",
			} {
				if got := r.String(s); got != s {
					t.Errorf("redact(%q) = %q, want it unchanged", s, got)
				}
			}
			for _, s := range []string{
				"dial redis://alice:" + pw + "@h:1: refused",
				`node "rediss://` + pw + `@h:2" down`,
				`{"node":"redis://:` + pw + `@h:3"}`,
				`bad node URL "redis://alice:` + pw + `"`, // cut at a comma
				`parse "redis://alice:` + pw + `": invalid port ":` + pw + `" after host`,
				"node alice:" + pw + " (no host)",
			} {
				if got := r.String(s); strings.Contains(got, pw+"@") || strings.Contains(got, ":"+pw) || strings.Contains(got, "//"+pw) {
					t.Errorf("redact(%q) = %q: the password shows", s, got)
				}
			}
		})
	}
}
