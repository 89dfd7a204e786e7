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

// TestCheckFencing checks the pure verdicts of doctor's fencing check.
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
	}{
		{"fence keys, appendfsync everysec", everysec, true, false, "FAIL"},
		// A node that forgets everything loses its floor too: the clients
		// repair single-resource tokens; sets and read-write locks are the
		// risk left. Before: FAIL, "a later grant can get a token already
		// given", as for a node that keeps an older copy.
		{"fence keys, no persistence at all", noAOF, true, false, "WARN"},
		{"fence keys, RDB snapshots", snapshots, true, false, "FAIL"},
		{"fence keys, no AOF, snapshots unknown", unknownSave, true, false, "FAIL"},
		{"fence keys, appendfsync always", healthy("c"), true, false, "ok"},
		{"no fence keys", everysec, false, false, ""},
		{"--fencing, no fence keys yet", everysec, false, true, "FAIL"},
		{"--fencing, appendfsync always", healthy("c"), false, true, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := checkFencing([]probe{tt.p}, []bool{tt.fenced}, tt.all)
			got := ""
			for _, f := range fs {
				if f.Rule == "R18" {
					got = f.Sev.String()
					if f.Sev == sevFail && (!strings.Contains(f.Fix, "dlm node --fencing") || !strings.Contains(f.What, "older copy of its keys")) {
						t.Errorf("FAIL %q, fix %q: want the risk (an older copy of the keys) and dlm node --fencing", f.What, f.Fix)
					}
					if f.Sev == sevWarn && (!strings.Contains(f.What, "single-resource locks and elections") || !strings.Contains(f.What, "read-write locks")) {
						t.Errorf("WARN %q: want what is repaired and what is not", f.What)
					}
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
// everysec (the default of dlm node before --fencing), doctor fails on each
// with the fix (before: every line ok); on nodes with appendfsync always
// it passes.
func TestDoctorFencing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opt   redlocktest.Option
		code  int
		wants string
	}{
		{"everysec", redlocktest.WithArgs("--appendonly", "yes", "--appendfsync", "everysec"), exitFailure, "FAIL  %s  [fencing tokens] holds fence keys"},
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
// --fencing doctor --fencing fails on the node.
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
		if failed := strings.Contains(r.stdout, "FAIL  127.0.0.1:"+strconv.Itoa(port)+"  [fencing tokens]"); failed == fencing {
			t.Errorf("--fencing=%v: doctor --fencing R18 FAIL = %v; stdout:\n%s", fencing, failed, r.stdout)
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
