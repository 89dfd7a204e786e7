package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// shellExample returns the shell example of docs/operations.md that
// starts with first: the indented block (a Markdown code block) that holds
// that line, dedented.
func shellExample(t *testing.T, first string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if l != "    "+first {
			continue
		}
		var block []string
		for _, l := range lines[i:] {
			if l != "" && !strings.HasPrefix(l, "    ") {
				break
			}
			block = append(block, strings.TrimPrefix(l, "    "))
		}
		return strings.Join(block, "\n")
	}
	t.Fatalf("docs/operations.md has no code block starting with %q", first)
	return ""
}

// bashExample returns bash's path (skipping t without it) and the code
// block of docs/operations.md that starts with first, its --wait 1m cut
// to 1s.
func bashExample(t *testing.T, first string) (bash, script string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script = shellExample(t, first)
	if !strings.Contains(script, "--wait 1m") {
		t.Fatalf("the example no longer says --wait 1m:\n%s", script)
	}
	return bash, strings.Replace(script, "--wait 1m", "--wait 1s", 1)
}

// runImportExample runs script with bash in a directory whose import.sh
// exits code, with the nodes of nodes, and fails t unless it printed
// output.
func runImportExample(t *testing.T, bash, script, nodes, code, output string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "import.sh"), []byte("#!/bin/sh\nexit "+code+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), nodesEnv+"="+nodes)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != output {
		t.Errorf("the example printed %q, want %q", got, output)
	}
}

// TestOperationsShellExample runs the exit-code example of
// docs/operations.md with bash, against real nodes, with --wait 1m cut to
// 1s: each exit code it names reaches its branch (the
// example read $? after `if !`, where it is 0, and no branch matched).
func TestOperationsShellExample(t *testing.T) {
	t.Parallel()
	bash, script := bashExample(t, "status=0")
	c := redlocktest.Start(t, 3)
	closed := "redis://" + redlocktest.RefusingAddr(t)
	holder, closeHolder, err := dial(defaultAdapter, c.URLs(), tlsFiles{}, 0, redlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeHolder)

	tests := []struct {
		name   string
		nodes  string
		code   string // import.sh's exit code
		held   bool   // the lock is held elsewhere
		output string
	}{
		{"success", strings.Join(c.URLs(), ","), "0", false, ""},
		{"held elsewhere", strings.Join(c.URLs(), ","), "0", true, "another import is running"},
		{"import fails", strings.Join(c.URLs(), ","), "3", false, "the import failed (3)"},
		{"nodes unreachable", closed, "0", false, "lock nodes unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.held {
				l, err := holder.TryLock(t.Context(), "import")
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = l.Unlock(t.Context()) }()
			}
			runImportExample(t, bash, script, tt.nodes, tt.code, tt.output)
		})
	}
}
