package main

import (
	"strings"
	"testing"
	"time"
)

// TestNodeRefusesSecretsOnArgv: a password given to redis-server after --
// is refused (64) before anything starts, with the safe way named and the
// password not printed: it would be on dlm node's and redis-server's
// command lines, which every local user reads with ps. Failed before for
// everything but --requirepass: dlm node -- --masterauth PW started the
// node with the password in both command lines.
func TestNodeRefusesSecretsOnArgv(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the option named, "" for none
	}{
		{[]string{"--masterauth", "pw-secret"}, "masterauth"},
		{[]string{"--MasterAuth", "pw-secret"}, "masterauth"},
		{[]string{"--requirepass", "pw-secret"}, "requirepass"},
		{[]string{"--requirepass=pw-secret"}, "requirepass"},
		{[]string{"--tls-key-file-pass", "pw-secret"}, "tls-key-file-pass"},
		{[]string{"--tls-client-key-file-pass", "pw-secret"}, "tls-client-key-file-pass"},
		{[]string{"--user", "alice", "on", ">pw-secret", "~*", "+@all"}, "user"},
		{[]string{"--user", "alice on >pw-secret ~* +@all"}, "user"},
		{[]string{"--save", "", "--user", "alice", "on", "<pw-secret"}, "user"},
		{[]string{"--masteruser", "alice", "--user", "alice", "on", "nopass", "~*"}, ""},
		{[]string{"--appendonly", "yes", "--dir", ">odd"}, ""},
		{[]string{"--maxmemory-policy", "noeviction"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, ok := secretOnArgv(tc.args)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("secretOnArgv = %q, %v; want %q", got, ok, tc.want)
			}
			if tc.want == "" {
				return
			}
			r := runDLM(t, 30*time.Second, nil, append([]string{"node", "--port", "1", "--dir", t.TempDir(), "--"}, tc.args...)...)
			safe := "--config"
			if tc.want == "requirepass" {
				safe = "--requirepass-file"
			}
			if r.code != exitUsage || !strings.Contains(r.stderr, "--"+tc.want) || !strings.Contains(r.stderr, safe) || strings.Contains(r.stderr, "pw-secret") {
				t.Errorf("exit %d, want %d naming --%s and %s, not the password; stderr: %s", r.code, exitUsage, tc.want, safe, r.stderr)
			}
		})
	}
}
