package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dlm/checker"
	"dlm/redlock/redlocktest"
)

// TestTortureUsage: bad flags are bad usage (64) with a reason; --list names
// every scenario with what it promises.
func TestTortureUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no scenario", []string{"torture"}, exitUsage, "no scenario"},
		{"unknown scenario", []string{"torture", "--scenario", "nope"}, exitUsage, `unknown scenario "nope"`},
		{"both", []string{"torture", "--scenario", "clock-jump", "--random"}, exitUsage, "not both"},
		{"short ttl", []string{"torture", "--scenario", "split-votes", "--ttl", "10ms"}, exitUsage, "ttl must be at least 200ms"},
		{"unknown fault", []string{"torture", "--random", "--faults", "meteor"}, exitUsage, `unknown fault "meteor"`},
		{"unknown adapter", []string{"torture", "--random", "--adapter", "jedis"}, exitUsage, `unknown adapter "jedis"`},
		{"too many workers", []string{"torture", "--random", "--workers", "17"}, exitUsage, "workers per client must be 1 to 16"},
		{"short delay", []string{"torture", "--scenario", "delayed-restart", "--restart-delay", "100ms"}, exitUsage, "must wait longer than the ttl"},
		{"cluster nodes beyond the nodes", []string{"torture", "--random", "--cluster-nodes", "6"}, exitUsage, "cluster nodes must be 0 to the 5 nodes, got 6"},
		{"cluster nodes off random", []string{"torture", "--scenario", "split-votes", "--cluster-nodes", "1"}, exitUsage, "--cluster-nodes is for random mode"},
		{"two replicas", []string{"torture", "--random", "--cluster-nodes", "1", "--cluster-replicas", "2"}, exitUsage, "cluster replicas must be 0 or 1"},
		{"replicas without cluster nodes", []string{"torture", "--random", "--cluster-replicas", "1"}, exitUsage, "cluster replicas need cluster nodes"},
		{"promotable elsewhere", []string{"torture", "--scenario", "cluster-random", "--promotable-replicas"}, exitUsage, "promotable replicas are for the cluster-master-partitioned scenario"},
		{"list", []string{"torture", "--list"}, exitOK, "lying-node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(t.Context(), tt.args, strings.NewReader(""), &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, &out, &errb)
			}
			if got := out.String() + errb.String(); !strings.Contains(got, tt.want) {
				t.Errorf("output %q does not mention %q", got, tt.want)
			}
			if tt.name == "list" {
				for _, line := range strings.Split(out.String(), "\n") {
					if f := strings.Fields(line); len(f) > 3 && f[0] == "restart-without-persistence" && strings.Join(f[1:4], " ") != "R16.1 violation expected" {
						t.Errorf("restart-without-persistence listed as %q, want R16.1 violation expected", line)
					}
					if f := strings.Fields(line); len(f) > 0 && f[0] == "cluster-master-partitioned" && !strings.Contains(line, "violation expected") {
						t.Errorf("cluster-master-partitioned listed as %q, want violation expected", line)
					}
				}
			}
		})
	}
}

// TestTortureCheckStoredHistory: --check judges a recorded history against
// what the named scenario's configuration promises.
func TestTortureCheckStoredHistory(t *testing.T) {
	bad := filepath.Join("..", "..", "checker", "testdata", "mutex-bad.json")
	tests := []struct {
		scenario string
		code     int
		want     string
		file     string
	}{
		{"restart-without-persistence", exitOK, "violation reproduced, as expected", bad},
		{"delayed-restart", exitFailure, "safety violated where it is promised", bad},
		// The same overlap with no fault in the history
		// is not the scenario's violation (before: exit 0, "violation
		// reproduced, as expected").
		{"restart-without-persistence", exitFailure, "violation not reproduced: the history holds no restart fault", noFaults(t, bad)},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(t.Context(), []string{"torture", "--check", tt.file, "--scenario", tt.scenario, "--seed", "3"}, strings.NewReader(""), &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, &out, &errb)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("summary does not say %q:\n%s", tt.want, &out)
			}
		})
	}
}

// TestTortureRun runs scenarios end to end through the dlm binary (a
// separate process: the proxies' goroutines stay out of this one), with
// --json, --report and --history, and checks the exit status, the JSON
// fields a user reads, and that the HTML report parses.
func TestTortureRun(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	tests := []struct {
		name string
		args []string
		code int
		// violation says whether a counterexample is expected.
		violation bool
	}{
		{"restart-without-persistence", []string{"--scenario", "restart-without-persistence"}, exitOK, true},
		{"client-pause fencing", []string{"--scenario", "client-pause", "--fencing"}, exitOK, false},
		// A promise the run cannot keep: every gap between a release and the
		// next grant is longer than 1ms, so liveness is reported violated.
		{"promise not kept", []string{"--scenario", "split-votes", "--duration", "1s", "--liveness-bound", "1ms"}, exitFailure, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			report, history := filepath.Join(dir, "r.html"), filepath.Join(dir, "h.json")
			args := append([]string{"torture", "--ttl", "2s", "--node-timeout", "400ms", "--seed", "11", "--json", "--report", report, "--history", history}, tt.args...)
			r := runDLM(t, 60*time.Second, nil, args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "--seed 11") {
				t.Errorf("the seed is not printed: %s", r.stderr)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("--json: %v\n%s", err, r.stdout)
			}
			for _, k := range []string{"scenario", "seed", "acquisitions", "violations", "counterexample", "stale_writes_accepted", "max_unavailable_ms", "faults"} {
				if _, ok := got[k]; !ok {
					t.Errorf("--json lacks %q", k)
				}
			}
			if (got["counterexample"] != nil) != tt.violation {
				t.Errorf("counterexample = %v, want one: %v", got["counterexample"], tt.violation)
			}
			if _, ok := got["faults"].([]any); !ok {
				t.Errorf("faults = %v, want a list", got["faults"])
			}
			b, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			d := xml.NewDecoder(bytes.NewReader(b))
			d.Strict = true
			svgs := 0
			for {
				tok, err := d.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("--report is not well-formed: %v", err)
				}
				if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "svg" {
					svgs++
				}
			}
			if svgs == 0 {
				t.Errorf("--report has no timeline")
			}
			// The stored history replays to the same verdict.
			var out, errb bytes.Buffer
			code := run(t.Context(), append([]string{"torture", "--check", history, "--seed", "11", "--ttl", "2s", "--node-timeout", "400ms"}, tt.args...), strings.NewReader(""), &out, &errb)
			if code != tt.code {
				t.Errorf("--check of the stored history: exit %d, want %d\n%s%s", code, tt.code, &out, &errb)
			}
		})
	}
}

// TestTortureInconclusive: --check of an empty history, or of one whose
// ttl overflows, exits 3 (inconclusive), never 0 "as promised"; an output
// path that cannot be written is refused before anything runs.
func TestTortureInconclusive(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	overflow := filepath.Join(dir, "overflow.json")
	if err := os.WriteFile(empty, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overflow, []byte(`{"nodes":3,"ops":[
{"id":1,"client":"a","resource":"r","kind":"acquire","lock":"a1","start":10,"end":20,"ok":true,"ttl":9223372036854775800,"until":-9223372036854775800},
{"id":2,"client":"b","resource":"r","kind":"acquire","lock":"b1","start":30,"end":40,"ok":true,"ttl":1000000000,"until":1000000030}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"empty history", []string{"torture", "--check", empty, "--scenario", "split-votes"}, exitInconclusive, "inconclusive"},
		{"ttl overflow", []string{"torture", "--check", overflow, "--scenario", "split-votes"}, exitInconclusive, "out of range"},
		{"report path", []string{"torture", "--scenario", "split-votes", "--report", filepath.Join(dir, "nonexistent", "x.html")}, exitUsage, "--report"},
		{"history path", []string{"torture", "--check", empty, "--history", filepath.Join(dir, "nonexistent", "h.json")}, exitUsage, "--history"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			start := time.Now()
			code := run(t.Context(), tt.args, strings.NewReader(""), &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, &out, &errb)
			}
			got := out.String() + errb.String()
			if !strings.Contains(got, tt.want) || strings.Contains(got, "as promised") {
				t.Errorf("output %q does not say %q (or says as promised)", got, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v: the output path was not checked before the run", d)
			}
		})
	}
}

// TestTortureProcessHolders: dlm torture's process-holders scenario runs
// its clients as dlm lock processes and SIGKILLs the dlm of a holder in
// its critical section; the checker finds no overlap (the dlm of ccf05d4 gives violations of 181 and 506 ms
// with seeds 3 and 4).
func TestTortureProcessHolders(t *testing.T) {
	redlocktest.Require(t)
	// A ttl and node timeout a loaded machine keeps (the node timeout at
	// most a quarter of the ttl, as dlm torture asks).
	r := runDLM(t, 180*time.Second, nil, "torture", "--scenario", "process-holders", "--duration", "12s", "--ttl", "4s",
		"--node-timeout", "1s", "--seed", "3", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Acquisitions int `json:"acquisitions"`
		Faults       []struct {
			Kind string `json:"kind"`
		} `json:"faults"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	kills := 0
	for _, f := range rep.Faults {
		if f.Kind == "kill-holder" {
			kills++
		}
	}
	if rep.Acquisitions < 2 || kills < 1 {
		t.Errorf("%d acquisitions, %d holders killed; want at least 2 and 1:\n%s", rep.Acquisitions, kills, r.stdout)
	}
}

// noFaults writes a copy of the history file path without its faults and
// returns the copy's path.
func noFaults(t *testing.T, path string) string {
	t.Helper()
	h, err := checker.LoadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	h.Faults = nil
	out := filepath.Join(t.TempDir(), "no-faults.json")
	if err := writeFile(out, h.WriteJSON); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTortureProgressAndAdapter: a run says how long it has run while it
// runs, and its clients use the adapter of the other subcommands, which
// the replay line names (torture defaulted to go-redis
// and printed nothing during a run).
func TestTortureProgressAndAdapter(t *testing.T) {
	redlocktest.Require(t)
	t.Parallel()
	// What is checked is the progress and the adapter, not the outcome: a
	// run at load 30 granted nothing in its 2s (ttl 2s, node timeout
	// 400ms) and was inconclusive (exit 3), which says nothing here.
	r := runDLM(t, 60*time.Second, nil, "torture", "--scenario", "split-votes", "--duration", "2s", "--ttl", "4s", "--node-timeout", "1s",
		"--seed", "11", "--progress", "300ms")
	if r.code != exitOK && r.code != exitInconclusive {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "dlm torture: running for ") {
		t.Errorf("no progress on stderr during the run:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "--adapter "+defaultAdapter) {
		t.Errorf("the replay line does not name the adapter %s:\n%s", defaultAdapter, r.stderr)
	}
}
