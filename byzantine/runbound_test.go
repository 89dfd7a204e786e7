package byzantine_test

import (
	"testing"
	"time"

	"dlm/byzantine"
)

// TestOMRejectsAnotherRunsSeq: an OM lieutenant refuses a message carrying
// another run's sequence number (regression: OM ignored Seq, so a message
// with Seq 999 was believed in a Seq 7 run).
func TestOMRejectsAnotherRunsSeq(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Seq = 7
	run7 := cfg.Run()
	tests := []struct {
		name string
		seq  uint64
		run  byzantine.RunID
		want byzantine.RejectReason
	}{
		{"same run", 7, run7, ""},
		{"another run", 999, run7, byzantine.RejectStale},
		{"previous run", 6, run7, byzantine.RejectStale},
		{"same seq, another run id", 7, byzantine.NewRunID([]byte("other cluster"), time.Time{}, 7), byzantine.RejectStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := byzantine.NewGeneral(cfg, 1, byzantine.Keyring{})
			if err != nil {
				t.Fatal(err)
			}
			g.Advance(0)
			got := g.Receive(byzantine.Message{From: 0, To: 1, Round: 0, Seq: tt.seq, Run: tt.run, Order: byzantine.Retreat, Path: []byzantine.ID{0}})
			if got != tt.want {
				t.Errorf("Receive(seq %d) = %q, want %q", tt.seq, got, tt.want)
			}
		})
	}
}

// TestNewRunID: every part of a run's binding changes its id.
func TestNewRunID(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	base := byzantine.NewRunID([]byte("cluster"), t0, 1)
	tests := []struct {
		name string
		id   byzantine.RunID
	}{
		{"cluster", byzantine.NewRunID([]byte("cluster2"), t0, 1)},
		{"start", byzantine.NewRunID([]byte("cluster"), t0.Add(time.Nanosecond), 1)},
		{"seq", byzantine.NewRunID([]byte("cluster"), t0, 2)},
		{"no binding", byzantine.NewRunID(nil, t0, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.id == base {
				t.Errorf("changing the %s kept the run id %s", tt.name, base)
			}
		})
	}
	if again := byzantine.NewRunID([]byte("cluster"), t0, 1); again != base {
		t.Errorf("NewRunID is not deterministic: %s then %s", base, again)
	}
	var back byzantine.RunID
	if err := back.UnmarshalText([]byte(base.String())); err != nil || back != base {
		t.Errorf("UnmarshalText(String()) = %s, %v; want %s", back, err, base)
	}
}
