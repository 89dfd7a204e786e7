package main

import (
	"strings"
	"testing"
)

// TestGeneralsBoundsAndHelp: an unsafe run's header says n is below the
// bound instead of citing the bound as if it were met; OM with m > n-2,
// which not even --unsafe runs, is refused for OM's own reason without
// suggesting --unsafe; the help lists exit status 3 (regressions: the
// header printed "(n >= 3m+1 = 4)" for n = 3, the OM refusal cited SM's
// bound and suggested --unsafe, and the help omitted exit 3).
func TestGeneralsBoundsAndHelp(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string // in stdout or stderr
		dont     string // in neither
	}{
		{"unsafe header", []string{"-n", "3", "--faulty", "2", "--strategy", "flip", "--unsafe"}, exitFailure, "below n >= 3m+1 = 4: unsafe", "(n >= 3m+1 = 4)"},
		{"OM m > n-2", []string{"-n", "3", "-m", "2"}, exitUsage, "OM(2) relays through m levels", "--unsafe"},
		{"OM m > n-2 with --unsafe", []string{"-n", "3", "-m", "2", "--unsafe"}, exitUsage, "even with AllowUnsafe", "SM"},
		{"help lists exit 3", []string{"--help"}, exitOK, "3   inconclusive", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGeneralsCLI(t, tt.args...)
			all := stdout + stderr
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tt.wantCode, all)
			}
			if !strings.Contains(all, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, all)
			}
			if tt.dont != "" && strings.Contains(all, tt.dont) {
				t.Errorf("output has %q:\n%s", tt.dont, all)
			}
		})
	}
}
