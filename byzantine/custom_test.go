package byzantine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"dlm/byzantine"
)

// TestExhaust: every traitor behaviour over {attack, retreat, nothing} for
// the small cases of issue 13: none breaks OM(1) with 4 generals nor SM(1)
// with 3 or 4; OM(1) with 3 generals breaks (B3) and the counterexample is
// found.
func TestExhaust(t *testing.T) {
	tests := []struct {
		name           string
		alg            byzantine.Algorithm
		n              int
		wantBehaviours int
		wantViolation  bool
	}{
		// none: 2 orders; commander: 3^(n-1) behaviours x 2 orders;
		// each lieutenant: 3^(n-2) x 2.
		{"OM n4 m1", byzantine.OM, 4, 2 + 27*2 + 3*9*2, false},
		{"SM n3 m1", byzantine.SM, 3, 2 + 9*2 + 2*3*2, false},
		{"SM n4 m1", byzantine.SM, 4, 2 + 27*2 + 3*9*2, false},
		{"OM n3 m1 (B3)", byzantine.OM, 3, 2 + 9*2 + 2*3*2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := byzantine.DefaultConfig()
			cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = tt.alg, tt.n, 1
			res, err := byzantine.Exhaust(t.Context(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Behaviours != tt.wantBehaviours {
				t.Errorf("behaviours = %d, want %d", res.Behaviours, tt.wantBehaviours)
			}
			if got := res.Violations > 0; got != tt.wantViolation {
				t.Fatalf("violations = %d, want violation %v (counterexample %+v)", res.Violations, tt.wantViolation, res.Counterexample)
			}
			if tt.wantViolation {
				c := res.Counterexample
				if c == nil || c.Traitor < 0 || len(c.Sent) == 0 || c.Err == "" {
					t.Errorf("counterexample = %+v, want the traitor, what it sent and the verdict", c)
				}
			}
		})
	}
}

// TestCustomTraitorNeedsFunc: the Custom strategy is refused without its
// function, and a function is refused on another strategy.
func TestCustomTraitorNeedsFunc(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Faulty = []byzantine.Traitor{{ID: 1, Strategy: byzantine.Custom}}
	if err := cfg.Validate(); !errors.Is(err, byzantine.ErrInvalidConfig) {
		t.Errorf("Custom without Func: Validate() = %v, want ErrInvalidConfig", err)
	}
	cfg.Faulty = []byzantine.Traitor{{ID: 1, Strategy: byzantine.FlipOrders, Func: func(_ int, h []byzantine.Message, _ byzantine.Signer) []byzantine.Message { return h }}}
	if err := cfg.Validate(); !errors.Is(err, byzantine.ErrInvalidConfig) {
		t.Errorf("Func on flip: Validate() = %v, want ErrInvalidConfig", err)
	}
}

// TestCustomTraitorSignsOnlyForItself: a custom SM lieutenant that alters
// the order it relays and signs it is still refused as forged: its
// signature covers its own link only.
func TestCustomTraitorSignsOnlyForItself(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = byzantine.SM, 4, 2
	cfg.Faulty = []byzantine.Traitor{{ID: 3, Strategy: byzantine.Custom, Func: func(_ int, honest []byzantine.Message, s byzantine.Signer) []byzantine.Message {
		var out []byzantine.Message
		for _, m := range honest {
			m.Order = byzantine.Flip(m.Order)
			signed, err := s.Sign(m)
			if err != nil {
				panic(err)
			}
			out = append(out, signed)
		}
		return out
	}}}
	res := mustRun(t, cfg)
	if err := res.Verify(); err != nil {
		t.Fatal(err)
	}
	if res.Rejected[byzantine.RejectForged] == 0 {
		t.Errorf("rejected = %v, want the altered relays refused as forged", res.Rejected)
	}
}

// A custom traitor: an SM commander that signs a different order for every
// lieutenant it writes to. The lieutenants detect the equivocation and
// still agree.
func ExampleTraitorFunc() {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals = byzantine.SM, 4
	orders := []byzantine.Order{"attack", "retreat", "hold"}
	cfg.Faulty = []byzantine.Traitor{{ID: 0, Strategy: byzantine.Custom, Func: func(_ int, honest []byzantine.Message, s byzantine.Signer) []byzantine.Message {
		var out []byzantine.Message
		for i, m := range honest {
			m.Order = orders[i%len(orders)]
			signed, err := s.Sign(m)
			if err != nil {
				panic(err)
			}
			out = append(out, signed)
		}
		return out
	}}}
	res, err := byzantine.Run(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	for _, id := range []byzantine.ID{1, 2, 3} {
		fmt.Printf("general %d: V=%v decides %s\n", id, res.Generals[id].Values, res.Generals[id].Decision)
	}
	fmt.Println("IC1 and IC2:", res.Verify() == nil)
	// Output:
	// general 1: V=[attack retreat] decides retreat
	// general 2: V=[retreat attack] decides retreat
	// general 3: V=[hold attack] decides retreat
	// IC1 and IC2: true
}

// B3 made exhaustive: with three generals, one traitor can break OM(1).
func ExampleExhaust() {
	cfg := byzantine.DefaultConfig()
	cfg.Generals = 3
	res, err := byzantine.Exhaust(context.Background(), cfg, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("behaviours:", res.Behaviours, "violations:", res.Violations)
	c := res.Counterexample
	fmt.Printf("traitor %d sent %v; loyal decisions %v\n", c.Traitor, c.Sent, c.Decisions)
	// Output:
	// behaviours: 32 violations: 4
	// traitor 1 sent [2 <- nothing]; loyal decisions map[2:retreat]
}
