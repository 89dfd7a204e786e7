package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGeneralsNodeOtherFlagsRefused runs four "dlm generals node"
// processes of one cluster, general 3 started with one run flag that
// differs. The three that agree refuse it at the handshake and name the
// flag with both values (other_runs), count it as the one fault m allows,
// decide the commander's order and exit 0; general 3 refuses all three,
// names the flag, and exits 3 as it saw more than m faulty generals
// (regression: the run flags were not bound into the run id, so a general
// with another --algorithm or --interactive ran with the others and every
// process exited 0).
func TestGeneralsNodeOtherFlagsRefused(t *testing.T) {
	t.Parallel() // the processes mostly wait for their start and rounds
	for _, tc := range []struct {
		name         string
		odd          []string // general 3's extra flags
		flag         string
		theirs, ours string // general 3's value and the others'
	}{
		{"algorithm", []string{"--algorithm", "sm"}, "algorithm", "sm", "om"},
		{"interactive", []string{"--interactive"}, "interactive", "true", "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, clusterFile := generalsCluster(t, 4)
			start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			type otherRun struct {
				ID    int `json:"id"`
				Flags []struct {
					Flag   string `json:"flag"`
					Theirs string `json:"theirs"`
					Ours   string `json:"ours"`
				} `json:"flags"`
			}
			type outcome struct {
				Decision  string     `json:"decision"`
				OtherRuns []otherRun `json:"other_runs"`
			}
			outs := make([]outcome, 4)
			codes := make([]int, 4)
			texts := make([]string, 4)
			errs := make([]error, 4)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					args := []string{"generals", "node", "--cluster", clusterFile, "--id", strconv.Itoa(i),
						"--key", filepath.Join(dir, fmt.Sprintf("g%d.key", i)), "--start", start,
						"-n", "4", "-m", "1", "--round-timeout", "2s", "--json"}
					if i == 3 {
						args = append(args, tc.odd...)
					}
					cmd := exec.CommandContext(ctx, dlmBin(), args...)
					var stdout, stderr bytes.Buffer
					cmd.Stdout, cmd.Stderr = &stdout, &stderr
					err := cmd.Run()
					var ee *exec.ExitError
					if errors.As(err, &ee) {
						codes[i] = ee.ExitCode()
					} else if err != nil {
						errs[i] = err
					}
					texts[i] = stdout.String() + stderr.String()
					if err := json.Unmarshal(stdout.Bytes(), &outs[i]); err != nil && errs[i] == nil {
						errs[i] = fmt.Errorf("general %d: %v\n%s", i, err, texts[i])
					}
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			refused := func(i, peer int, theirs, ours string) {
				t.Helper()
				k := slices.IndexFunc(outs[i].OtherRuns, func(o otherRun) bool { return o.ID == peer })
				if k < 0 {
					t.Errorf("general %d: other_runs %+v, want general %d named\n%s", i, outs[i].OtherRuns, peer, texts[i])
					return
				}
				f := outs[i].OtherRuns[k].Flags
				if len(f) != 1 || f[0].Flag != tc.flag || f[0].Theirs != theirs || f[0].Ours != ours {
					t.Errorf("general %d on general %d: flags %+v, want one: %s %s there, %s here", i, peer, f, tc.flag, theirs, ours)
				}
			}
			for i := range 3 {
				if codes[i] != exitOK || outs[i].Decision != "attack" {
					t.Errorf("general %d: exit %d, decision %q, want 0 and attack\n%s", i, codes[i], outs[i].Decision, texts[i])
				}
				refused(i, 3, tc.theirs, tc.ours)
			}
			if codes[3] != exitInconclusive {
				t.Errorf("general 3 (other flags): exit %d, want %d\n%s", codes[3], exitInconclusive, texts[3])
			}
			want := fmt.Sprintf("--%s %s there, %s here", tc.flag, tc.ours, tc.theirs)
			if !strings.Contains(texts[3], want) {
				t.Errorf("general 3 printed:\n%s\nwant it to name %q", texts[3], want)
			}
			for p := range 3 {
				refused(3, p, tc.ours, tc.theirs)
			}
		})
	}
}

// TestGeneralsEpochOtherCommandRefused: four generals of one team run one
// epoch, general 3 as "dlm generals clock" and the others as "dlm
// generals leader": the leaders refuse it, name the command, elect their
// leader and exit 0; general 3 names the command of the others and exits
// 3, more than m of them being absent for it (before, the four read one
// agreed vector, three as proposals for a leader, one as clock readings).
// Rounds of 2 s, as TestGeneralsEpochs': a general stalled for an eighth
// of a round just before a deadline runs that round out of time (exit 3),
// and at 1 s that is 125 ms, which a loaded machine gives an in-process
// general under -race (seen once at load 18-28).
func TestGeneralsEpochOtherCommandRefused(t *testing.T) {
	t.Parallel()
	const n = 4
	dir, cluster := generalsCluster(t, n)
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	outs, errs := make([]string, n), make([]string, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			use := "leader"
			if i == 3 {
				use = "clock"
			}
			args := []string{"generals", use, "--cluster", cluster, "--id", strconv.Itoa(i), "--key", filepath.Join(dir, fmt.Sprintf("g%d.key", i)),
				"--start", start, "-n", strconv.Itoa(n), "-m", "1", "--round-timeout", "2s", "--epochs", "1"}
			var out, errb bytes.Buffer
			codes[i] = run(t.Context(), args, strings.NewReader(""), &out, &errb)
			outs[i], errs[i] = out.String(), errb.String()
		})
	}
	wg.Wait()
	type line struct {
		Leader    *int `json:"leader"`
		OtherRuns []struct {
			ID    int `json:"id"`
			Flags []struct {
				Flag, Theirs, Ours string
			} `json:"flags"`
		} `json:"other_runs"`
	}
	for i := range n {
		var l line
		if err := json.Unmarshal([]byte(strings.TrimSpace(outs[i])), &l); err != nil {
			t.Fatalf("general %d: %v\n%s%s", i, err, outs[i], errs[i])
		}
		wantCode, theirs, ours, peers := exitOK, "clock", "leader", []int{3}
		if i == 3 {
			wantCode, theirs, ours, peers = exitInconclusive, "leader", "clock", []int{0, 1, 2}
		}
		if codes[i] != wantCode {
			t.Errorf("general %d: exit %d, want %d\n%s%s", i, codes[i], wantCode, outs[i], errs[i])
		}
		var got []int
		for _, o := range l.OtherRuns {
			got = append(got, o.ID)
			if len(o.Flags) != 1 || o.Flags[0].Flag != "command" || o.Flags[0].Theirs != theirs || o.Flags[0].Ours != ours {
				t.Errorf("general %d on general %d: %+v, want command %s there, %s here", i, o.ID, o.Flags, theirs, ours)
			}
		}
		if !slices.Equal(got, peers) {
			t.Errorf("general %d refused %v, want %v\n%s", i, got, peers, outs[i])
		}
		if i < 3 && (l.Leader == nil || *l.Leader != 0) {
			t.Errorf("general %d: leader %v, want 0\n%s", i, l.Leader, outs[i])
		}
	}
	if want := "dlm generals leader there, clock here"; !strings.Contains(errs[3], want) {
		t.Errorf("general 3 printed:\n%s\nwant it to name %q", errs[3], want)
	}
}
