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
			dir, clusterFile := epochCluster(t, 4)
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
