package byzantine_test

import (
	"errors"
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

// TestSMChainLengthTiedToRound: an SM chain with k relays belongs to round
// k; a longer chain tagged with an earlier round is refused as malformed,
// as OM refuses such a path (regression: SM accepted it).
func TestSMChainLengthTiedToRound(t *testing.T) {
	f := newChainFixture(t)
	g := general(t, f.cfg, 3, f.keys, f.pub)
	g.Advance(0)
	g.Advance(1)
	early := f.v012 // attack:0:1:2, sent in round 2
	early.Round = 1
	if got := g.Receive(early); got != byzantine.RejectMalformed {
		t.Errorf("chain of 2 relays in round 1: Receive = %q, want %q", got, byzantine.RejectMalformed)
	}
	if v := g.Values(); len(v) != 0 {
		t.Errorf("V = %v, want empty", v)
	}
}

// TestReplayTraitorSeesNoSameRoundMessages: whatever the order in which the
// in-memory transport delivers a round, a general's messages of round r
// depend only on what it received before round r (regression: a Replay
// traitor with a high id re-sent, in round 1, chains the lower ids had
// sent it in that same round).
func TestReplayTraitorSeesNoSameRoundMessages(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = byzantine.SM, 4, 2
	cfg.Faulty = []byzantine.Traitor{{ID: 3, Strategy: byzantine.Replay}}
	cfg.Trace = true
	res := mustRun(t, cfg)
	for _, ev := range res.Trace {
		m := ev.Message
		if m.From == 3 && m.Round == 1 && len(m.Path) == 2 && m.Path[1] != 3 {
			t.Errorf("general 3 re-sent %s in round 1, a chain sent in round 1", m.Chain())
		}
	}
}

// TestTraceCountsAgainstTheSizeLimit: a traced run is refused when its
// trace would hold too many messages (regression: -n 16 -m 5 --trace took
// 1.8 GB and -n 20 -m 5 --trace ran out of memory).
func TestTraceCountsAgainstTheSizeLimit(t *testing.T) {
	tests := []struct {
		name    string
		alg     byzantine.Algorithm
		n, m    int
		trace   bool
		wantErr error
	}{
		{"OM n16 m5 traced", byzantine.OM, 16, 5, true, byzantine.ErrTooLarge},
		{"OM n20 m5 traced", byzantine.OM, 20, 5, true, byzantine.ErrTooLarge},
		{"OM n16 m5 untraced", byzantine.OM, 16, 5, false, nil},
		{"OM n13 m4 traced", byzantine.OM, 13, 4, true, nil},
		{"SM n100 m3 traced", byzantine.SM, 100, 3, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := byzantine.DefaultConfig()
			cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.Trace = tt.alg, tt.n, tt.m, tt.trace
			err := cfg.Validate()
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Validate() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestOMRefusesSignatures: an oral message carrying signatures (the
// insider's 63 KiB frame) is malformed, not believed.
func TestOMRefusesSignatures(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	g, err := byzantine.NewGeneral(cfg, 1, byzantine.Keyring{})
	if err != nil {
		t.Fatal(err)
	}
	g.Advance(0)
	m := byzantine.Message{From: 0, To: 1, Round: 0, Seq: cfg.Seq, Run: cfg.Run(), Order: byzantine.Attack, Path: []byzantine.ID{0}, Sigs: [][]byte{make([]byte, 250)}}
	if got := g.Receive(m); got != byzantine.RejectMalformed {
		t.Errorf("Receive(OM message with a signature) = %q, want %q", got, byzantine.RejectMalformed)
	}
}
