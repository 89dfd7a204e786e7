package torture

import (
	"slices"
	"testing"
)

// TestFaultTable: every fault kind is one complete row, and what random
// mode promises under each follows from its row.
func TestFaultTable(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range faultTable() {
		if f.Name == "" || f.Does == "" || f.Breaks == nil || f.inject == nil || seen[f.Name] {
			t.Errorf("fault row %+v is incomplete or repeated", f.Name)
		}
		seen[f.Name] = true
	}
	if got := DefaultRandomFaults(); !slices.Equal(got, []string{FaultRestart, FaultPauseNode, FaultLatency, FaultPartition}) {
		t.Errorf("DefaultRandomFaults() = %v", got)
	}
	tests := []struct {
		fault string
		mod   func(*Config)
		want  Expectation
	}{
		{FaultRestart, func(c *Config) { c.DelayedRestart = false }, ExpectNoPromise},
		{FaultRestart, func(c *Config) { c.DelayedRestart = false; c.Persistence = true }, ExpectSafe},
		{FaultRestart, nil, ExpectSafe}, // random turns on delayed restarts
		{FaultClockJump, nil, ExpectNoPromise},
		{FaultClockJump, func(c *Config) { c.Byzantine = 1 }, ExpectSafe},
		{FaultPauseClient, nil, ExpectNoPromise},
		{FaultPauseClient, func(c *Config) { c.Fencing = true }, ExpectSafe},
		{FaultPartition, nil, ExpectSafe},
		{FaultLatency, nil, ExpectSafe},
		{FaultPauseNode, nil, ExpectSafe},
	}
	for _, tt := range tests {
		c := DefaultConfig("random")
		c.Faults = []string{tt.fault}
		if tt.mod != nil {
			tt.mod(&c)
		}
		if got := c.Expect(); got != tt.want {
			t.Errorf("%s: Expect() = %v, want %v", c, got, tt.want)
		}
	}
}
