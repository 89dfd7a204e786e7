package byzantine_test

import (
	"errors"
	"strings"
	"testing"

	"dlm/byzantine"
)

func config(alg byzantine.Algorithm, n, m int, faulty ...byzantine.Traitor) byzantine.Config {
	c := byzantine.DefaultConfig()
	c.Algorithm, c.Generals, c.MaxTraitors, c.Faulty = alg, n, m, faulty
	return c
}

func TestValidate(t *testing.T) {
	om, sm := byzantine.OM, byzantine.SM
	unsafe := func(c byzantine.Config) byzantine.Config { c.AllowUnsafe = true; return c }
	with := func(c byzantine.Config, f func(*byzantine.Config)) byzantine.Config { f(&c); return c }
	tests := []struct {
		name    string
		cfg     byzantine.Config
		wantErr error  // nil = valid
		mention string // the reason must say this
	}{
		{"default", byzantine.DefaultConfig(), nil, ""},
		{"OM n=4 m=1", config(om, 4, 1), nil, ""},
		{"B3 OM n=3 m=1 refused", config(om, 3, 1), byzantine.ErrUnsafe, "3m+1"},
		{"B3 OM n=6 m=2 refused", config(om, 6, 2), byzantine.ErrUnsafe, "n >= 3m+1 = 7"},
		{"B3 OM n=3 m=1 unsafe allowed", unsafe(config(om, 3, 1)), nil, ""},
		{"B9 SM n=3 m=1", config(sm, 3, 1), nil, ""},
		{"B9 SM n=4 m=2", config(sm, 4, 2), nil, ""},
		{"B9 SM n=3 m=2 refused", config(sm, 3, 2), byzantine.ErrUnsafe, "n >= m+2 = 4"},
		{"B9 SM n=3 m=2 refused even unsafe", unsafe(config(sm, 3, 2)), byzantine.ErrUnsafe, "m must be at most n-2"},
		{"more traitors than m", config(om, 4, 1, byzantine.Traitor{ID: 1, Strategy: "flip"}, byzantine.Traitor{ID: 2, Strategy: "flip"}), byzantine.ErrUnsafe, "tolerates m = 1"},
		{"more traitors than m, unsafe", unsafe(config(om, 4, 1, byzantine.Traitor{ID: 1, Strategy: "flip"}, byzantine.Traitor{ID: 2, Strategy: "flip"})), nil, ""},
		{"unknown algorithm", with(config(om, 4, 1), func(c *byzantine.Config) { c.Algorithm = "paxos" }), byzantine.ErrInvalidConfig, "paxos"},
		{"one general", config(sm, 1, 0), byzantine.ErrInvalidConfig, "generals"},
		{"negative m", config(om, 4, -1), byzantine.ErrInvalidConfig, "negative"},
		{"traitor out of range", config(om, 4, 1, byzantine.Traitor{ID: 4, Strategy: "flip"}), byzantine.ErrInvalidConfig, "out of range"},
		{"traitor twice, not counted as two over m", config(om, 4, 1, byzantine.Traitor{ID: 0, Strategy: "flip"}, byzantine.Traitor{ID: 0, Strategy: "flip"}), byzantine.ErrInvalidConfig, "general 0 listed twice"},
		{"traitor twice", unsafe(config(om, 4, 1, byzantine.Traitor{ID: 1, Strategy: "flip"}, byzantine.Traitor{ID: 1, Strategy: "flip"})), byzantine.ErrInvalidConfig, "twice"},
		{"unknown strategy", config(om, 4, 1, byzantine.Traitor{ID: 1, Strategy: "sneaky"}), byzantine.ErrInvalidConfig, "sneaky"},
		{"forge needs SM", config(om, 4, 1, byzantine.Traitor{ID: 1, Strategy: byzantine.Forge}), byzantine.ErrInvalidConfig, "SM only"},
		{"replay with SM", config(sm, 4, 1, byzantine.Traitor{ID: 1, Strategy: byzantine.Replay}), nil, ""},
		{"empty order", with(config(om, 4, 1), func(c *byzantine.Config) { c.Order = "" }), byzantine.ErrInvalidConfig, "order"},
		{"bad majority", with(config(om, 4, 1), func(c *byzantine.Config) { c.Majority = "mode" }), byzantine.ErrInvalidConfig, "majority"},
		{"zero timeout", with(config(om, 4, 1), func(c *byzantine.Config) { c.RoundTimeout = 0 }), byzantine.ErrInvalidConfig, "timeout"},
		{"bad fault rate", with(config(om, 4, 1), func(c *byzantine.Config) { c.Faults.Drop = 2 }), byzantine.ErrInvalidConfig, "rate"},
		{"OM too large", config(om, 40, 13), byzantine.ErrTooLarge, "messages"},
		{"OM too large to count", config(om, 64, 21), byzantine.ErrTooLarge, "sends over 9.2e18 messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, byzantine.ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want %v (and ErrInvalidConfig)", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("Validate() = %q, want it to mention %q", err, tt.mention)
			}
		})
	}
}

func TestRunRefusesInvalidConfig(t *testing.T) {
	_, err := byzantine.Run(t.Context(), config(byzantine.OM, 3, 1))
	if !errors.Is(err, byzantine.ErrUnsafe) {
		t.Fatalf("Run(OM n=3 m=1) err = %v, want ErrUnsafe", err)
	}
}

func TestOMMessagesFormula(t *testing.T) {
	tests := []struct{ n, m, want int }{
		{4, 1, 9}, {7, 2, 156}, {4, 0, 3}, {10, 3, 3609}, {13, 4, 108384}, {16, 5, 3999675},
	}
	for _, tt := range tests {
		if got := byzantine.OMMessages(tt.n, tt.m); got != tt.want {
			t.Errorf("OMMessages(%d, %d) = %d, want %d", tt.n, tt.m, got, tt.want)
		}
	}
}
