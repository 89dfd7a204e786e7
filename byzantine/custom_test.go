package byzantine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"dlm/byzantine"
)

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
