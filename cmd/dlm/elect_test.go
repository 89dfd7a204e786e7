package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

func TestElectUsage(t *testing.T) {
	t.Parallel()
	good := "redis://127.0.0.1:1"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no --id", []string{"elect", "--nodes", good, "db", "--", "true"}, "candidate id is empty"},
		{"id with a newline", []string{"elect", "--nodes", good, "db", "--id", "a\nb", "--", "true"}, "unprintable"},
		{"id too long", []string{"elect", "--nodes", good, "db", "--id", strings.Repeat("x", 257), "--", "true"}, "at most 256"},
		{"empty name", []string{"elect", "--nodes", good, "", "--id", "a", "--", "true"}, "election name is empty"},
		{"missing --", []string{"elect", "--nodes", good, "db", "--id", "a", "true"}, "missing `--`"},
		{"no command", []string{"elect", "--nodes", good, "db", "--id", "a", "--"}, "no command"},
		{"two names", []string{"elect", "--nodes", good, "db", "x", "--id", "a", "--", "true"}, "exactly one election NAME"},
		{"ttl 0", []string{"elect", "--nodes", good, "--ttl", "0", "db", "--id", "a", "--", "true"}, "--ttl must be positive"},
		{"node timeout over ttl", []string{"elect", "--nodes", good, "--ttl", "1s", "--node-timeout", "2s", "db", "--id", "a", "--", "true"}, "--node-timeout"},
		{"no nodes", []string{"elect", "db", "--id", "a", "--", "true"}, "no nodes"},
		{"leader no name", []string{"leader", "--nodes", good}, "exactly one election NAME"},
		{"leader bad name", []string{"leader", "--nodes", good, "d\tb"}, "unprintable"},
		{"leader timeout 0", []string{"leader", "--nodes", good, "--timeout", "0", "db"}, "--timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runDLM(t, 20*time.Second, nil, tt.args...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not contain the reason %q", r.stderr, tt.want)
			}
		})
	}
}

// leaderOf runs dlm leader --json and decodes its output.
func leaderOf(t *testing.T, nodes, name string) leaderJSON {
	t.Helper()
	r := runDLM(t, 60*time.Second, nil, "leader", "--nodes", nodes, "--node-timeout", "1s", "--json", name)
	if r.code != 0 {
		t.Fatalf("dlm leader: exit %d; stderr: %s", r.code, r.stderr)
	}
	var j leaderJSON
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("dlm leader --json printed %q: %v", r.stdout, err)
	}
	return j
}

// TestElect: a runs its command while it leads, with the election, its id
// and term in the environment, and dlm leader reports it; b campaigns
// meanwhile and does not run; a's leadership is lost (its keys deleted),
// so a's command is terminated and dlm exits 74; b is elected with a
// higher term, runs, exits 0 and resigns.
func TestElect(t *testing.T) {
	t.Parallel()
	// ttl 4s and node timeout 1s, which a loaded machine keeps: the test
	// waits for no ttl (a's keys are deleted), and with ttl 900ms a's
	// leadership could run out under load before c gave up.
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	dir := t.TempDir()
	readyA, readyB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	script := `echo "$DLM_ELECTION $DLM_LEADER_ID $DLM_LEADER_TERM" > "$1"; `
	a, _, stderrA := dlmCmd(t, nil, "elect", "--nodes", nodes, "--ttl", "4s", "--node-timeout", "1s", "--grace", "2s",
		"db", "--id", "a", "--", "sh", "-c", script+"exec sleep 60", "sh", readyA)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- a.Wait() }()
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return strings.TrimSpace(string(b))
	}
	redlocktest.Eventually(t, 20*time.Second, func() bool { return read(readyA) != "" }, "a's command never ran; stderr: %s", stderrA)
	fields := strings.Fields(read(readyA))
	if len(fields) != 3 || fields[0] != "db" || fields[1] != "a" {
		t.Fatalf("a's environment %q, want \"db a TERM\"", read(readyA))
	}
	termA, err := strconv.ParseUint(fields[2], 10, 64)
	if err != nil || termA == 0 {
		t.Fatalf("DLM_LEADER_TERM %q, want a positive term", fields[2])
	}
	if j := leaderOf(t, nodes, "db"); j.Leader == nil || *j.Leader != "a" || j.Term != termA || j.Name != "db" {
		t.Fatalf("dlm leader --json = %+v, want a with term %d", j, termA)
	}

	b, _, stderrB := dlmCmd(t, nil, "elect", "--nodes", nodes, "--ttl", "4s", "--node-timeout", "1s", "--wait", "30s",
		"db", "--id", "b", "--", "sh", "-c", script, "sh", readyB)
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	doneB := make(chan error, 1)
	go func() { doneB <- b.Wait() }()
	// c gives up after --wait while a leads: exit 75, its command not run.
	r := runDLM(t, 30*time.Second, nil, "elect", "--nodes", nodes, "--ttl", "4s", "--node-timeout", "1s", "--wait", "1s",
		"db", "--id", "c", "--", "sh", "-c", "echo ran > \"$1\"", "sh", filepath.Join(dir, "c"))
	if r.code != exitNotAcquired || fileExists(filepath.Join(dir, "c")) || !strings.Contains(r.stderr, `"c" not elected`) {
		t.Errorf("c with --wait 1s: exit %d (want %d), command ran: %v; stderr: %s", r.code, exitNotAcquired, fileExists(filepath.Join(dir, "c")), r.stderr)
	}
	if fileExists(readyB) {
		t.Fatalf("b's command ran while a leads")
	}
	key := redlock.DefaultKeyPrefix + "election:db"
	for _, s := range c.Servers {
		if err := s.Client().Del(t.Context(), key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-doneA:
		if code := exitOf(err); code != exitLockLost {
			t.Errorf("a: exit %d, want %d; stderr: %s", code, exitLockLost, stderrA)
		}
		if !strings.Contains(stderrA.String(), "leadership of election \"db\" lost") {
			t.Errorf("a's stderr %q does not say the leadership was lost", stderrA)
		}
	case <-time.After(30 * time.Second):
		_ = a.Process.Kill()
		<-doneA
		t.Fatalf("dlm elect a did not end after its keys were deleted; stderr: %s", stderrA)
	}
	select {
	case err := <-doneB:
		if code := exitOf(err); code != 0 {
			t.Fatalf("b: exit %d, want 0; stderr: %s", code, stderrB)
		}
	case <-time.After(30 * time.Second):
		_ = b.Process.Kill()
		<-doneB
		t.Fatalf("dlm elect b was not elected; stderr: %s", stderrB)
	}
	fields = strings.Fields(read(readyB))
	if len(fields) != 3 || fields[1] != "b" {
		t.Fatalf("b's environment %q, want \"db b TERM\"", read(readyB))
	}
	termB, _ := strconv.ParseUint(fields[2], 10, 64)
	if termB <= termA {
		t.Errorf("b's term %d, want above a's %d", termB, termA)
	}
	if j := leaderOf(t, nodes, "db"); j.Leader != nil || j.Term != termB {
		t.Errorf("dlm leader --json after b resigned = %+v, want no leader, term %d", j, termB)
	}
	if keys := keysOn(c); len(keys) != 0 {
		t.Errorf("lock keys left: %v", keys)
	}
}
