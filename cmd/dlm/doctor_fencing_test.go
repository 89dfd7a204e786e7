package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// TestCheckFencing checks the pure verdicts of doctor's fencing check. A
// node that can come back from a crash with an older copy of its keys, or
// with none, comes back with a new replication id: its fence floor counts
// as missing and the clients repair the tokens of every fenced lock from
// their clocks (redlock/scripts/floor.lua), so doctor warns. Before: FAIL,
// "its fence floor key included, so the clients do not see the loss and do
// not repair it", and a WARN without persistence saying that sets and
// read-write locks have no repair.
func TestCheckFencing(t *testing.T) {
	everysec := healthy("a")
	everysec.Config["appendfsync"] = "everysec"
	noAOF := healthy("b")
	noAOF.Config["appendonly"] = "no"
	snapshots := healthy("s")
	snapshots.Config["appendonly"], snapshots.Config["save"] = "no", "3600 1 300 100"
	unknownSave := healthy("u")
	unknownSave.Config["appendonly"] = "no"
	delete(unknownSave.Config, "save")
	tests := []struct {
		name   string
		p      probe
		fenced bool
		all    bool
		want   string // severity of the one R18 finding, "" for none
		risk   string // what the WARN says the node can come back with
	}{
		{"fence keys, appendfsync everysec", everysec, true, false, "WARN", "older copy of its keys"},
		{"fence keys, no persistence at all", noAOF, true, false, "WARN", "forgets every fence key"},
		{"fence keys, RDB snapshots", snapshots, true, false, "WARN", "older copy of its keys"},
		{"fence keys, no AOF, snapshots unknown", unknownSave, true, false, "WARN", "older copy of its keys"},
		{"fence keys, appendfsync always", healthy("c"), true, false, "ok", ""},
		{"no fence keys", everysec, false, false, "", ""},
		{"--fencing, no fence keys yet", everysec, false, true, "WARN", "older copy of its keys"},
		{"--fencing, appendfsync always", healthy("c"), false, true, "ok", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := checkFencing([]probe{tt.p}, []bool{tt.fenced}, tt.all)
			got := ""
			for _, f := range fs {
				if f.Rule != "R18" {
					continue
				}
				got = f.Sev.String()
				if f.Sev != sevWarn {
					continue
				}
				for _, want := range []string{tt.risk, "every fenced lock", "a set, a writer", "wall clocks", "not stepped back"} {
					if !strings.Contains(f.What, want) {
						t.Errorf("WARN %q lacks %q", f.What, want)
					}
				}
				for _, wrong := range []string{"do not repair", "no repair", "single-resource"} {
					if strings.Contains(f.What+f.Fix, wrong) {
						t.Errorf("WARN %q, fix %q says %q: every fenced lock is repaired", f.What, f.Fix, wrong)
					}
				}
				if !strings.Contains(f.Fix, "appendfsync always") || !strings.Contains(f.Fix, "dlm node --fencing") {
					t.Errorf("fix %q: want appendfsync always and dlm node --fencing", f.Fix)
				}
			}
			if got != tt.want || len(fs) > 1 {
				t.Errorf("findings %+v, want one R18 finding %q", fs, tt.want)
			}
		})
	}
}

// TestDoctorFencing runs against real redis-servers: once
// dlm lock --fencing has left fence keys on nodes with appendfsync
// everysec (the default of dlm node without --fencing), doctor warns on
// each with the fix and exits 0, as the clients repair the tokens after
// such a node's crash (before: every line ok, then a FAIL and exit 1); on
// nodes with appendfsync always it says ok.
func TestDoctorFencing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opt   redlocktest.Option
		code  int
		wants string
	}{
		{"everysec", redlocktest.WithArgs("--appendonly", "yes", "--appendfsync", "everysec"), 0, "WARN  %s  [fencing tokens] holds fence keys"},
		{"always", redlocktest.WithPersistence(), 0, "ok    %s  [fencing tokens] holds fence keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := redlocktest.Start(t, 3, tc.opt)
			nodes := strings.Join(c.URLs(), ",")
			if r := runDLM(t, 30*time.Second, nil, "lock", "--nodes", nodes, "--node-timeout", "1s", "--fencing", "res", "--", "true"); r.code != 0 {
				t.Fatalf("dlm lock --fencing: exit %d; stderr: %s", r.code, r.stderr)
			}
			r := runDLM(t, 30*time.Second, nil, "doctor", "--nodes", nodes)
			if r.code != tc.code {
				t.Errorf("doctor: exit %d, want %d; stdout:\n%s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			// The nodes that hold fence keys: every node of the
			// fenced grant's quorum, maybe not the slowest one (a lock
			// returns once a quorum confirmed).
			holding := 0
			for _, s := range c.Servers {
				if len(s.MustKeys(redlock.DefaultFencePrefix)) == 0 {
					continue
				}
				holding++
				if want := strings.Replace(tc.wants, "%s", s.Addr(), 1); !strings.Contains(r.stdout, want) {
					t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
				}
			}
			if holding < 2 {
				t.Errorf("fence keys on %d nodes after dlm lock --fencing, want a quorum (2)", holding)
			}
		})
	}
}

// TestNodeFencing: dlm node --fencing runs redis-server with appendfsync
// always, and dlm doctor --fencing finds nothing to fix on it; without
// --fencing doctor --fencing warns on the node (before: a FAIL) and exits 0.
func TestNodeFencing(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	for _, fencing := range []bool{true, false} {
		port, err := redisproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		cmd, _, stderr := dlmCmd(t, nil, "node", "--port", strconv.Itoa(port), "--dir", t.TempDir(), "--max-ttl", "2s",
			"--fencing="+strconv.FormatBool(fencing), "--", "--save", "", "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		redlocktest.Eventually(t, 20*time.Second, func() bool { return pings(port) }, "dlm node never served; log:\n%s", stderr)
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		got, err := c.ConfigGet(ctx, "appendfsync").Result()
		cancel()
		c.Close()
		want := map[bool]string{true: "always", false: "everysec"}[fencing]
		if err != nil || got["appendfsync"] != want {
			t.Errorf("--fencing=%v: appendfsync %q (%v), want %q", fencing, got["appendfsync"], err, want)
		}
		r := runDLM(t, 30*time.Second, nil, "doctor", "--fencing", "--nodes", "redis://127.0.0.1:"+strconv.Itoa(port))
		want = map[bool]string{true: "ok  ", false: "WARN"}[fencing] + "  127.0.0.1:" + strconv.Itoa(port) + "  [fencing tokens]"
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("--fencing=%v: doctor --fencing exit %d, want 0 and %q; stdout:\n%s", fencing, r.code, want, r.stdout)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
	}
}

// TestFindingTagsSayWhatTheyMean: every finding doctor prints names its
// rule by what the rule asks, not by a number that a user cannot look up
// (before: "[R18] holds fence keys ...", then "[R18 fencing tokens]").
func TestFindingTagsSayWhatTheyMean(t *testing.T) {
	bad := healthy("a")
	bad.Role, bad.Master, bad.ClockOK = "slave", "10.0.0.1:6379", true
	bad.Config["maxmemory-policy"], bad.Config["appendonly"] = "allkeys-lru", "no"
	down := probe{Node: "d", Err: errors.New("connection refused")}
	ps := []probe{bad, healthy("b"), healthy("c"), down}
	fs := append(diagnose(ps, 3, time.Second), checkFencing(ps, []bool{true, true, false, false}, false)...)
	var out strings.Builder
	printFindings(&out, fs)
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(line, "      fix:") {
			continue
		}
		open, end := strings.Index(line, "["), strings.Index(line, "]")
		if open < 0 || end < open {
			t.Errorf("finding without a tag: %q", line)
			continue
		}
		if tag := line[open+1 : end]; tag == "rule" || ruleNumber.MatchString(tag) {
			t.Errorf("tag %q says no more than a rule number: %q", line[open:end+1], line)
		}
	}
}
