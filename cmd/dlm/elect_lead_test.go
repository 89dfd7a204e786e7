package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A leader keeps leading past --max-extensions (as in "dlm elect --ttl
// 1500ms --max-extensions 3 svc --id solo -- sleep 60", shorter):
// ttl 4s and --max-extensions 2 lead through a 7s command, about 5
// extensions, and exit 0 (a ttl of 600ms with a node timeout of 200ms
// could lose the leadership on a loaded machine). Before, dlm exited 74 after about 2 extensions.
// A second candidate waiting with --json says who leads and since when,
// and gives up after --wait (75); the leader's --json events say it was
// elected and resigned.
func TestElectKeepsLeadingAndAnnounces(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	a, _, stderrA := dlmCmd(t, nil, "elect", "--nodes", nodes, "--ttl", "4s", "--node-timeout", "1s", "--max-extensions", "2", "--json",
		"svc", "--id", "solo", "--", "sleep", "7")
	start := time.Now()
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- a.Wait() }()
	redlocktest.Eventually(t, 60*time.Second, func() bool { return strings.Contains(stderrA.String(), `"event":"elected"`) },
		"a never elected; stderr: %s", stderrA)
	r := runDLM(t, 60*time.Second, nil, "elect", "--nodes", nodes, "--ttl", "4s", "--node-timeout", "1s", "--wait", "1s", "--json",
		"svc", "--id", "other", "--", "true")
	if r.code != exitNotAcquired {
		t.Errorf("the waiting candidate: exit %d, want %d; stderr: %s", r.code, exitNotAcquired, r.stderr)
	}
	var saw bool
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var ev electEvent
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Event != "leader" {
			continue
		}
		if ev.Leader == nil || *ev.Leader != "solo" || ev.Term == 0 || ev.Since == nil {
			t.Errorf("waiting event %s, want leader solo with a term and since", line)
			continue
		}
		if since, err := time.Parse(time.RFC3339Nano, *ev.Since); err != nil || since.Before(start.Add(-time.Second)) || since.After(time.Now()) {
			t.Errorf("since %q (%v), want between the start %v and now", *ev.Since, err, start)
		}
		saw = true
	}
	if !saw {
		t.Errorf("the waiting candidate's stderr has no leader event: %s", r.stderr)
	}
	if j := leaderOf(t, nodes, "svc"); j.Leader == nil || *j.Leader != "solo" || j.Since == nil {
		t.Errorf("dlm leader --json while solo leads = %+v, want solo with since", j)
	}
	select {
	case err := <-doneA:
		if code := exitOf(err); code != 0 {
			t.Fatalf("the leader: exit %d after %v, want 0 after its 7s command; stderr: %s", code, time.Since(start), stderrA)
		}
	case <-time.After(60 * time.Second):
		_ = a.Process.Kill()
		<-doneA
		t.Fatalf("dlm elect did not end after its command; stderr: %s", stderrA)
	}
	if !strings.Contains(stderrA.String(), `"event":"ended"`) || !strings.Contains(stderrA.String(), `"reason":"resigned"`) {
		t.Errorf("the leader's stderr has no ended event with reason resigned: %s", stderrA)
	}
	if j := leaderOf(t, nodes, "svc"); j.Leader != nil {
		t.Errorf("dlm leader after the leader resigned = %+v, want none", j)
	}
}

// On a terminal, a waiting dlm elect says in words who leads and since
// when; a term that went down is said, not hidden.
func TestElectAnnouncesOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	a := announcer{w: &buf, tty: true, name: "svc"}
	since := time.Now().Add(-90 * time.Second)
	a.event("leader", election.Status{Leader: election.Leader{ID: "solo", Term: 7}, OK: true, Since: since}, "", nil)
	a.event("leader", election.Status{Leader: election.Leader{Term: 7}}, "", nil)
	a.event("leader", election.Status{Leader: election.Leader{ID: "x", Term: 2}, OK: true}, "", errors.New("election: term went down"))
	got := buf.String()
	for _, want := range []string{
		`dlm elect: waiting: election "svc": leader "solo", term 7, since ` + since.UTC().Format(time.RFC3339) + " (1m30s ago)",
		`dlm elect: waiting: election "svc": no leader (last term 7)`,
		`dlm elect: waiting: election "svc": leader "x", term 2: election: term went down`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("output %q does not say %q", got, want)
		}
	}
	var quiet bytes.Buffer
	announcer{w: &quiet, name: "svc"}.event("leader", election.Status{}, "", nil)
	if quiet.Len() != 0 {
		t.Errorf("not a terminal, no --json: wrote %q, want nothing", quiet.String())
	}
}

// A leader whose dlm hangs (SIGSTOP) stops extending: its leadership ends
// within the ttl for the others, and a waiting candidate is elected with a
// higher term while the first is still stopped; when it runs again it
// notices the loss and exits 74.
func TestElectHungLeaderIsReplaced(t *testing.T) {
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	// a's command carries a mark (familyOf finds it by that, as this
	// process sees it: its pid inside the guard's PID namespace would not
	// do) and creates it once it runs.
	mark := filepath.Join(t.TempDir(), "a-runs")
	a, _, stderrA := dlmCmd(t, nil, "elect", "--nodes", nodes, "--ttl", "3s", "--node-timeout", "1s", "--grace", "1s", "--json",
		"svc", "--id", "a", "--", "sh", "-c", `export DLM_TEST_FAMILY="$1"; touch "$1"; exec sleep 60`, "sh", mark)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- a.Wait() }()
	defer func() { _ = a.Process.Kill() }()
	redlocktest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(stderrA.String(), `"event":"elected"`) },
		"a never elected; stderr: %s", stderrA)
	var famA []int
	redlocktest.Eventually(t, 20*time.Second, func() bool {
		famA = familyOf(mark)
		return fileExists(mark) && len(famA) == 1
	}, "a's command never ran (found %v); stderr: %s", famA, stderrA)
	termA := leaderOf(t, nodes, "svc").Term
	if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	r := runDLM(t, 90*time.Second, nil, "elect", "--nodes", nodes, "--ttl", "3s", "--node-timeout", "1s", "--wait", "60s",
		"svc", "--id", "b", "--", "sh", "-c", `echo "$DLM_LEADER_TERM"`)
	elected := time.Since(stopped)
	if r.code != 0 {
		t.Fatalf("b: exit %d, want 0; stderr: %s", r.code, r.stderr)
	}
	if termB, _ := strconv.ParseUint(strings.TrimSpace(r.stdout), 10, 64); termB <= termA {
		t.Errorf("b's term %q, want above a's %d", r.stdout, termA)
	}
	t.Logf("b elected %v after a's dlm was stopped (ttl 3s)", elected.Round(time.Millisecond))
	// dlm elect: a's guard knew the validity and ended
	// a's command at its end, though a's dlm was stopped; so a's command
	// no longer runs once b leads.
	if left := stillRunning(append(famA, familyOf(mark)...)); len(left) > 0 {
		t.Errorf("a's command (pids %v) still runs while b leads: the guard did not end it at a's validity: %v", famA, left)
	}
	if err := a.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT to a: %v; a ended: %v; stderr: %s", err, <-doneA, stderrA)
	}
	select {
	case err := <-doneA:
		if code := exitOf(err); code != exitLockLost {
			t.Errorf("a after SIGCONT: exit %d, want %d; stderr: %s", code, exitLockLost, stderrA)
		}
		// The ended event says it was lost, never that a resigned.
		if !strings.Contains(stderrA.String(), `"event":"ended"`) || strings.Contains(stderrA.String(), `"reason":"resigned"`) {
			t.Errorf("a's ended event does not say its leadership was lost; stderr: %s", stderrA)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("a did not end after SIGCONT; stderr: %s", stderrA)
	}
}

// The ended event of a leadership whose command the guard killed at the
// end of its validity says it was lost, even when the library has not
// ended the leadership yet (a dlm starved on a loaded machine): the
// resignation that follows would otherwise read as "resigned" (attack
// review: a --json "ended" event said "resigned" after exit 74).
func TestElectEndedReasonAfterTheGuardKilled(t *testing.T) {
	nodes, _ := redlocktest.NewMemNodes(3)
	client, err := redlock.New(nodes, redlock.WithFencing())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	e, err := election.New(client, "svc")
	if err != nil {
		t.Fatal(err)
	}
	lead, err := e.Campaign(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lead.Resign(context.Background()) }()
	var out strings.Builder
	announcer{w: &out, json: true, name: "svc"}.ended(lead, withCode(exitLockLost, nil))
	if !strings.Contains(out.String(), `"event":"ended"`) || !strings.Contains(out.String(), `"reason":"lost: `) {
		t.Errorf("ended event %s, want reason lost", out.String())
	}
	out.Reset()
	announcer{w: &out, json: true, name: "svc"}.ended(lead, nil)
	if !strings.Contains(out.String(), `"reason":"resigned"`) {
		t.Errorf("ended event %s after the command's own end, want reason resigned", out.String())
	}
}
