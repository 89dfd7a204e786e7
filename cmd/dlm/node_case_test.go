package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestNodeSettingIgnoresCase: redis-server reads its option names in any
// case, so dlm node must too, when it reads what it told redis-server
// (persistence decides whether a clean stop removes the restart marker).
// Failed before: with -- --APPENDONLY no, setting("appendonly") = "yes"
// (dlm node printed "appendonly yes" for a server running without it).
func TestNodeSettingIgnoresCase(t *testing.T) {
	for _, tt := range []struct {
		extra []string
		name  string
		want  string
	}{
		{[]string{"--appendonly", "no"}, "appendonly", "no"},
		{[]string{"--APPENDONLY", "no"}, "appendonly", "no"},
		{[]string{"--AppendFsync", "always"}, "appendfsync", "always"},
		{[]string{"--SAVE", ""}, "save", ""},
	} {
		nc := &nodeConfig{binary: "redis-server", port: 1, bind: "127.0.0.1", dir: ".", extra: tt.extra}
		if got := nc.setting(tt.name); got != tt.want {
			t.Errorf("-- %q: setting(%q) = %q, want %q", tt.extra, tt.name, got, tt.want)
		}
	}
}

// TestNodeRequirePassAnyCase: a password after -- is refused whatever
// the case of the option's name (redis-server takes --REQUIREPASS as
// --requirepass). Failed before: -- --REQUIREPASS PW started the node
// with the password on dlm node's command line, readable in ps.
func TestNodeRequirePassAnyCase(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	for _, opt := range []string{"--REQUIREPASS", "--RequirePass"} {
		r := runDLM(t, 30*time.Second, nil, "node", "--port", "1", "--dir", t.TempDir(), "--", opt, "node-pw")
		if r.code != exitUsage || !strings.Contains(r.stderr, "--requirepass-file") || strings.Contains(r.stderr, "node-pw") {
			t.Errorf("-- %s: exit %d, want %d naming --requirepass-file (and not the password); stderr: %s", opt, r.code, exitUsage, r.stderr)
		}
	}
}
