package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestGeneralsExitCodes(t *testing.T) {
	tests := []generalsCase{
		{"defaults: OM(1), four loyal generals", nil, exitOK, "IC1 (all loyal lieutenants obey the same order): holds", ""},
		{"B6 traitorous lieutenant", []string{"--faulty", "3", "--strategy", "two-faced"}, exitOK, "traitors: 3 (two-faced)", ""},
		{"B9 SM n=4 m=2 two traitors", []string{"--algorithm", "sm", "-n", "4", "-m", "2", "--faulty", "0,2:forge"}, exitOK, "signatures", ""},
		{"B3 refused: n < 3m+1", []string{"-n", "3", "--faulty", "2", "--strategy", "flip"}, exitUsage, "", "3m+1"},
		{"B3 unsafe run breaks IC2", []string{"-n", "3", "--faulty", "2", "--strategy", "flip", "--unsafe"}, exitFailure, "VIOLATED", "IC2 violated"},
		{"more traitors than m", []string{"--faulty", "1,2"}, exitUsage, "", "tolerates m = 1"},
		{"unknown algorithm", []string{"--algorithm", "paxos"}, exitUsage, "", "paxos"},
		{"bad faulty id", []string{"--faulty", "x"}, exitUsage, "", "not a general id"},
		{"faulty id out of range", []string{"--faulty", "9"}, exitUsage, "", "out of range"},
		{"unknown strategy", []string{"--faulty", "1", "--strategy", "sneaky"}, exitUsage, "", "sneaky"},
		{"forge needs SM", []string{"--faulty", "1:forge"}, exitUsage, "", "SM only"},
		{"unknown transport", []string{"--transport", "pigeon"}, exitUsage, "", "pigeon"},
		{"unknown majority", []string{"--majority", "mode"}, exitUsage, "", "majority"},
		{"unknown flag", []string{"--bogus"}, exitUsage, "", "unknown flag"},
		{"stray argument", []string{"attack"}, exitUsage, "", ""},
	}
	runGeneralsCases(t, tests)
}

// generalsOutput is the part of --json the tests read.
type generalsOutput struct {
	Algorithm   string            `json:"algorithm"`
	Generals    int               `json:"generals"`
	MaxTraitors int               `json:"max_traitors"`
	Faulty      []int             `json:"faulty"`
	Decisions   map[string]string `json:"decisions"`
	Messages    int               `json:"messages"`
	Rounds      int               `json:"rounds"`
	IC1         bool              `json:"ic1"`
	IC2         bool              `json:"ic2"`
	Transport   string            `json:"transport"`
}

func parseGeneralsJSON(t *testing.T, stdout string) generalsOutput {
	t.Helper()
	var out generalsOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("--json output is not one JSON object: %v\n%s", err, stdout)
	}
	return out
}

func TestGeneralsJSON(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		want      generalsOutput
		decisions map[string]string
	}{
		{
			name:      "OM(1) n=4, traitor 3",
			args:      []string{"--faulty", "3"},
			want:      generalsOutput{Algorithm: "om", Generals: 4, MaxTraitors: 1, Faulty: []int{3}, Messages: 9, Rounds: 2, IC1: true, IC2: true, Transport: "memory"},
			decisions: map[string]string{"1": "attack", "2": "attack"},
		},
		{
			name:      "OM(2) n=7 loyal",
			args:      []string{"-n", "7", "-m", "2", "--order", "retreat"},
			want:      generalsOutput{Algorithm: "om", Generals: 7, MaxTraitors: 2, Faulty: []int{}, Messages: 156, Rounds: 3, IC1: true, IC2: true, Transport: "memory"},
			decisions: map[string]string{"1": "retreat", "2": "retreat", "3": "retreat", "4": "retreat", "5": "retreat", "6": "retreat"},
		},
		{
			name:      "SM(1) n=3 equivocating commander",
			args:      []string{"--algorithm", "sm", "-n", "3", "--faulty", "0"},
			want:      generalsOutput{Algorithm: "sm", Generals: 3, MaxTraitors: 1, Faulty: []int{0}, Messages: 4, Rounds: 2, IC1: true, IC2: true, Transport: "memory"},
			decisions: map[string]string{"1": "retreat", "2": "retreat"},
		},
		{
			name:      "unsafe OM(1) n=3",
			args:      []string{"-n", "3", "--faulty", "2", "--strategy", "flip", "--unsafe"},
			wantCode:  exitFailure,
			want:      generalsOutput{Algorithm: "om", Generals: 3, MaxTraitors: 1, Faulty: []int{2}, Messages: 4, Rounds: 2, IC1: true, IC2: false, Transport: "memory"},
			decisions: map[string]string{"1": "retreat"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGeneralsCLI(t, append(tt.args, "--json")...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.wantCode, stderr)
			}
			got := parseGeneralsJSON(t, stdout)
			decisions := got.Decisions
			got.Decisions = nil
			if !jsonEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if !jsonEqual(decisions, tt.decisions) {
				t.Errorf("decisions = %v, want %v (loyal lieutenants only)", decisions, tt.decisions)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestGeneralsTrace(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []*regexp.Regexp
	}{
		{"OM paths round by round", []string{"--faulty", "3", "--trace"}, []*regexp.Regexp{
			regexp.MustCompile(`(?m)^round 0:$`),
			regexp.MustCompile(`(?m)^round 1:$`),
			regexp.MustCompile(`(?m)^  0 -> 1  attack:0$`),
			regexp.MustCompile(`(?m)^  3 -> 2  retreat:0:3$`),
		}},
		{"SM chains v:0:j:k", []string{"--algorithm", "sm", "-n", "5", "-m", "2", "--faulty", "0,3:forge", "--trace"}, []*regexp.Regexp{
			regexp.MustCompile(`(?m)^round 2:$`),
			regexp.MustCompile(`(?m)^  \d -> \d  (attack|retreat):0:\d:\d$`),
			regexp.MustCompile(`rejected: forged`),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGeneralsCLI(t, tt.args...)
			if code != exitOK {
				t.Fatalf("exit %d; stderr: %s", code, stderr)
			}
			for _, re := range tt.want {
				if !re.MatchString(stdout) {
					t.Errorf("trace lacks %s:\n%s", re, stdout)
				}
			}
		})
	}
}

// TestGeneralsSeedReplays: the same seed gives the same output.
func TestGeneralsSeedReplays(t *testing.T) {
	args := []string{"-n", "7", "-m", "2", "--faulty", "0:random,5:random", "--seed", "99", "--json"}
	_, a, _ := runGeneralsCLI(t, args...)
	_, b, _ := runGeneralsCLI(t, args...)
	if a != b {
		t.Errorf("two runs with --seed 99 differ:\n%s\n%s", a, b)
	}
}

// TestGeneralsProcesses runs generals as separate dlm processes:
// "dlm generals --transport tcp", and "dlm generals node" from a cluster
// file as on several machines.
func TestGeneralsProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := dlmBin() // built once by TestMain
	t.Run("transport tcp", func(t *testing.T) { testGeneralsTCP(t, bin) })
	t.Run("cluster file", func(t *testing.T) { testGeneralsCluster(t, bin) })
	t.Run("cluster file, a general down", func(t *testing.T) { testGeneralsClusterDown(t, bin) })
	t.Run("transport tcp crash", func(t *testing.T) { testGeneralsTCPCrash(t, bin) })
}

// testGeneralsTCPCrash: over tcp, a general whose process crashes (--crash)
// is reported crashed, the survivors' decisions are kept and the run exits
// 0 (regression: one crashed general made the coordinator discard every
// decision and exit 1, the status of a violated IC1/IC2).
func testGeneralsTCPCrash(t *testing.T, bin string) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "generals", "--transport", "tcp", "--json", "--round-timeout", "500ms", "--crash", "2@1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dlm: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Crashed   []int             `json:"crashed"`
		Decisions map[string]string `json:"decisions"`
		IC1, IC2  bool
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if !slices.Equal(got.Crashed, []int{2}) || len(got.Decisions) != 2 || got.Decisions["1"] != "attack" || got.Decisions["3"] != "attack" {
		t.Errorf("crashed %v, decisions %v; want [2] and survivors 1, 3 attacking", got.Crashed, got.Decisions)
	}
}

// testGeneralsTCP runs "dlm generals --transport tcp", which starts every
// general as its own dlm process on loopback.
func testGeneralsTCP(t *testing.T, bin string) {
	tests := []struct {
		name     string
		args     []string
		messages int
		faulty   []int
	}{
		{"OM(1) n=4", []string{"-n", "4", "-m", "1"}, 9, []int{}},
		{"OM(2) n=7 colluding", []string{"-n", "7", "-m", "2", "--faulty", "0,4", "--strategy", "colluding"}, 156, []int{0, 4}},
		{"SM(2) n=5 forge", []string{"--algorithm", "sm", "-n", "5", "-m", "2", "--faulty", "0,3:forge"}, 0, []int{0, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"generals", "--transport", "tcp", "--json", "--round-timeout", "1s"}, tt.args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("dlm: %v\nstderr: %s", err, stderr.String())
			}
			got := parseGeneralsJSON(t, stdout.String())
			if !got.IC1 || !got.IC2 || got.Transport != "tcp" {
				t.Errorf("ic1=%v ic2=%v transport=%s, want agreement over tcp", got.IC1, got.IC2, got.Transport)
			}
			if tt.messages > 0 && got.Messages != tt.messages {
				t.Errorf("messages = %d, want %d", got.Messages, tt.messages)
			}
			if !slices.Equal(got.Faulty, tt.faulty) {
				t.Errorf("faulty = %v, want %v", got.Faulty, tt.faulty)
			}
			if want := got.Generals - 1 - len(tt.faulty) + countZero(tt.faulty); len(got.Decisions) != want {
				t.Errorf("%d decisions, want %d (loyal lieutenants)", len(got.Decisions), want)
			}
		})
	}
}

// testGeneralsCluster follows docs/agreement.md: keygen per general, one
// cluster file (generalsCluster), one "dlm generals node" process per general with a common
// start time.
func testGeneralsCluster(t *testing.T, bin string) {
	const n = 4
	dir, clusterFile := generalsCluster(t, n)
	start := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano) // a node refuses a start already past (exit 64)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	type outcome struct {
		ID       int    `json:"id"`
		Loyal    bool   `json:"loyal"`
		Decision string `json:"decision"`
	}
	outs := make([]outcome, n)
	stdouts, errs := generalNodes(ctx, bin, dir, clusterFile, start, n, -1, func(int) []string {
		return []string{"--algorithm", "sm", "-n", "4", "-m", "1", "--faulty", "0", "--round-timeout", "1s", "--json"}
	})
	decodeOutcomes(stdouts, errs, outs)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range outs[1:] {
		if !o.Loyal || o.Decision != outs[1].Decision || o.Decision == "" {
			t.Errorf("lieutenants decided %+v: want one order (IC1)", outs[1:])
			break
		}
	}
	if outs[0].Loyal {
		t.Errorf("general 0 reports loyal; it was --faulty")
	}
}

// generalNodes runs a "dlm generals node" process (bin) for every general
// of the n of clusterFile (made by generalsCluster in dir) but down (-1:
// none), all at once, starting their run at start, with the further flags
// that flags(i) gives. It returns what each printed on stdout and each
// one's error, with its output.
func generalNodes(ctx context.Context, bin, dir, clusterFile, start string, n, down int, flags func(i int) []string) ([][]byte, []error) {
	stdouts := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		if i == down {
			continue
		}
		wg.Go(func() {
			args := append([]string{"generals", "node", "--cluster", clusterFile, "--id", strconv.Itoa(i),
				"--key", filepath.Join(dir, fmt.Sprintf("g%d.key", i)), "--start", start}, flags(i)...)
			cmd := exec.CommandContext(ctx, bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("general %d: %v\nstdout: %s\nstderr: %s", i, err, stdout.String(), stderr.String())
				return
			}
			stdouts[i] = stdout.Bytes()
		})
	}
	wg.Wait()
	return stdouts, errs
}

// decodeOutcomes decodes into outs[i] the JSON that general i printed,
// for every general that ran without error, and keeps the decoding's
// error in errs[i].
func decodeOutcomes[T any](stdouts [][]byte, errs []error, outs []T) {
	for i, b := range stdouts {
		if errs[i] == nil && b != nil {
			errs[i] = json.Unmarshal(b, &outs[i])
		}
	}
}

func countZero(ids []int) int {
	if slices.Contains(ids, 0) {
		return 1
	}
	return 0
}

// testGeneralsClusterDown: one general of the cluster file is never
// started. A crash within m is a fault the run allows: every live node
// decides the loyal commander's order, names the absent general among the
// faulty peers it saw, and exits 0 (regression: every live node said it
// ran out of time and exited 3).
func testGeneralsClusterDown(t *testing.T, bin string) {
	const n, down = 4, 3
	dir, clusterFile := generalsCluster(t, n)
	start := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	type outcome struct {
		Decision string `json:"decision"`
		Faults   []struct {
			ID   int    `json:"id"`
			Kind string `json:"kind"`
		} `json:"faults"`
	}
	outs := make([]outcome, n)
	stdouts, errs := generalNodes(ctx, bin, dir, clusterFile, start, n, down, func(int) []string {
		return []string{"--algorithm", "om", "-n", "4", "-m", "1", "--round-timeout", "1s", "--json"}
	})
	decodeOutcomes(stdouts, errs, outs)
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for i, o := range outs {
		if i == down || errs[i] != nil {
			continue
		}
		if i != 0 && o.Decision != "attack" {
			t.Errorf("general %d decided %q, want attack", i, o.Decision)
		}
		if len(o.Faults) != 1 || o.Faults[0].ID != down {
			t.Errorf("general %d reports faults %+v, want general %d only", i, o.Faults, down)
		}
	}
}
