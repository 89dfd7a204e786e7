package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The helpers that the tests of dlm generals share.

// runGeneralsCLI runs "dlm generals args..." in process.
func runGeneralsCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), append([]string{"generals"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// generalsCase is a run of dlm generals in a table: its arguments, the
// exit code it must end with, and what its stdout and stderr must hold
// ("" holds in any).
type generalsCase struct {
	name       string
	args       []string
	wantCode   int
	wantStdout string
	wantStderr string
}

// runGeneralsCases runs each case as a subtest (wantGeneralsRun).
func runGeneralsCases(t *testing.T, tests []generalsCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantGeneralsRun(t, tt.args, tt.wantCode, tt.wantStdout, tt.wantStderr)
		})
	}
}

// wantGeneralsRun runs "dlm generals args..." in process and fails t
// unless it exits with wantCode, its stdout holds wantStdout and its
// stderr wantStderr ("" holds in any).
func wantGeneralsRun(t *testing.T, args []string, wantCode int, wantStdout, wantStderr string) {
	t.Helper()
	code, stdout, stderr := runGeneralsCLI(t, args...)
	if code != wantCode {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, stdout, stderr)
	}
	if !strings.Contains(stdout, wantStdout) {
		t.Errorf("stdout lacks %q:\n%s", wantStdout, stdout)
	}
	if !strings.Contains(stderr, wantStderr) {
		t.Errorf("stderr lacks %q:\n%s", wantStderr, stderr)
	}
}

// generalsCluster makes n keys and a cluster file on free loopback ports, as
// docs/agreement.md does, and returns the directory and the file.
func generalsCluster(t *testing.T, n int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	var cluster struct {
		Generals []map[string]any `json:"generals"`
	}
	for i := range n {
		key := filepath.Join(dir, fmt.Sprintf("g%d.key", i))
		code, out, stderr := runGeneralsCLI(t, "keygen", "--out", key)
		if code != exitOK {
			t.Fatalf("keygen: exit %d: %s", code, stderr)
		}
		cluster.Generals = append(cluster.Generals, map[string]any{"id": i, "addr": lowFreeAddr(t), "public_key": strings.TrimSpace(out)})
	}
	b, _ := json.Marshal(cluster)
	file := filepath.Join(dir, "cluster.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}
