package main

import (
	"testing"
)

// TestEveryTraitorSetBudget: --every-traitor-set stops at its --budget,
// says INCOMPLETE with what it covered (on stdout; with --json, where
// stdout has one line per run, on stderr) and exits 3, as dlm generals
// exhaust does; a search that ends in its budget is complete (0), one
// that finds a violation exits 1; --budget alone, or not positive, is bad
// usage.
// Failed before: "exit 64, want 3 ... unknown flag: --budget" (and the
// search had no bound: OM n=13 m=4 is 6,553 runs of about a second each).
func TestEveryTraitorSetBudget(t *testing.T) {
	t.Parallel()
	every := []string{"--interactive", "-n", "10", "-m", "3", "--every-traitor-set"}
	for _, tt := range []struct {
		name               string
		args               []string
		wantCode           int
		wantStdout, stderr string
	}{
		{"stopped", append(every, "--budget", "200ms"), exitInconclusive, "INCOMPLETE: --budget 200ms ran out after", ""},
		{"stopped, json", append(every, "--budget", "200ms", "--json"), exitInconclusive, "", "INCOMPLETE: --budget 200ms ran out after"},
		{"complete", []string{"--interactive", "-n", "7", "-m", "2", "--every-traitor-set", "--budget", "10m"}, exitOK, "169 runs, 0 violating", ""},
		{"violation", []string{"--interactive", "-n", "3", "--every-traitor-set", "--unsafe", "--budget", "10m"}, exitFailure, "19 runs, 13 violating", "violate the vector conditions"},
		{"budget alone", []string{"--interactive", "--budget", "1s"}, exitUsage, "", "--budget bounds --every-traitor-set"},
		{"budget zero", append(every, "--budget", "0s"), exitUsage, "", "want a positive duration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantGeneralsRun(t, tt.args, tt.wantCode, tt.wantStdout, tt.stderr)
		})
	}
}
