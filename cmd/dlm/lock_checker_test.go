package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dlm/checker"
	"dlm/redlock/redlocktest"
)

// TestLockHoldersUnderTheChecker runs guarded commands under the checker:
// holders are dlm lock processes whose commands log when their critical
// section starts and ends; the first holder's dlm is killed with SIGKILL
// while its command still has 3 s of work to do, and four more dlm lock
// processes queue for the lock. The log, as a checker history, must show
// no overlap (checker.CheckMutex). Before the fix the orphaned command
// finished its work, and logged it, after the lock had expired and another
// holder had started.
func TestLockHoldersUnderTheChecker(t *testing.T) {
	c := redlocktest.Start(t, 3)
	dir := t.TempDir()
	logf, ready, pidf := filepath.Join(dir, "log"), filepath.Join(dir, "ready"), filepath.Join(dir, "victim.pid")
	nodes := strings.Join(c.URLs(), ",")
	// A ttl and node timeout a loaded machine keeps: what is under test is
	// the holders' exclusion, not how fast the nodes answer.
	const ttl, nodeTimeout = 3 * time.Second, "1s"
	section := func(id, work string) string {
		return `echo "start ` + id + ` $(date +%s%N)" >> "$1"; ` + work + `; echo "end ` + id + ` $(date +%s%N)" >> "$1"`
	}
	victim, _, vstderr := dlmCmd(t, nil, "lock", "--nodes", nodes, "--ttl", ttl.String(), "--node-timeout", nodeTimeout, "res", "--",
		"sh", "-c", `touch "$3"; `+section("victim", `touch "$2"; sleep 3`), "sh", logf, ready, pidf)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	vdone := make(chan error, 1)
	go func() { vdone <- victim.Wait() }()
	redlocktest.Eventually(t, 60*time.Second, func() bool { return fileExists(ready) && fileExists(pidf) },
		"the first holder never ran; stderr: %s", vstderr)
	// The victim's shell carries pidf in its arguments (its own pid is
	// that of the guard's PID namespace, not ours).
	// A child the shell has forked but not yet exec'd (touch, sleep)
	// carries the same arguments for a moment: wait for the one shell.
	var vpids []int
	redlocktest.Eventually(t, 30*time.Second, func() bool {
		vpids = familyOf(pidf)
		return len(vpids) == 1
	}, "the first holder's command never came down to its one shell (processes carrying %s, read again at each check)", pidf)
	vpid := vpids[0]
	t.Cleanup(func() { _ = syscall.Kill(vpid, syscall.SIGKILL) })
	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// The others queue for the lock while the victim's keys run out.
	var wg sync.WaitGroup
	results := make([]result, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runDLM(t, 180*time.Second, nil, "lock", "--nodes", nodes, "--ttl", ttl.String(), "--node-timeout", nodeTimeout,
				"--wait", "120s", "res", "--", "sh", "-c", section("h"+strconv.Itoa(i), "sleep 0.2"), "sh", logf)
		}()
	}
	// The victim's command is over when its process is gone: its critical
	// section ends then at the latest (or at its own "end" line).
	var victimGone int64
	redlocktest.Eventually(t, 60*time.Second, func() bool {
		if alive(vpid) {
			return false
		}
		victimGone = time.Now().UnixNano()
		return true
	}, "the first holder's command still runs after its dlm was killed")
	wg.Wait()
	<-vdone
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("holder %d: exit %d; stderr: %s", i, r.code, r.stderr)
		}
	}
	h, n := sectionsHistory(t, logf, victimGone)
	if n != 5 {
		t.Errorf("%d critical sections logged, want 5", n)
	}
	if res := checker.CheckMutex(h); res.Verdict != checker.OK {
		t.Errorf("the checker finds the holders overlapped: %v", res)
	}
}

// sectionsHistory reads the start/end log of the holders into a checker
// history: one acquisition per holder, believed held from its start line
// to its end line (or, with no end line, to gone: when its process was
// seen gone). It returns the number of sections.
func sectionsHistory(t *testing.T, path string, gone int64) (*checker.History, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start, end := map[string]int64{}, map[string]int64{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var what, id string
		var ns int64
		if _, err := fmt.Sscan(sc.Text(), &what, &id, &ns); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if what == "start" {
			start[id] = ns
			order = append(order, id)
		} else {
			end[id] = ns
		}
	}
	t0 := gone
	for _, s := range start {
		t0 = min(t0, s)
	}
	h := &checker.History{Nodes: 3}
	for i, id := range order {
		e, ok := end[id]
		if !ok {
			e = gone
		}
		h.Ops = append(h.Ops, checker.Op{ID: i, Client: id, Resource: "res", Kind: checker.Acquire, Lock: id,
			Start: start[id] - t0, End: start[id] - t0, OK: true, TTL: e - start[id], Until: e - t0})
	}
	return h, len(order)
}
