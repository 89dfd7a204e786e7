package byzantine_test

import (
	"context"
	"errors"
	"fmt"

	"dlm/byzantine"
)

// OM(1) with four generals and a two-faced lieutenant: the loyal
// lieutenants still obey the commander (B6).
func ExampleRun() {
	cfg := byzantine.DefaultConfig() // OM(1), n = 4, attack
	cfg.Faulty = []byzantine.Traitor{{ID: 3, Strategy: byzantine.TwoFaced}}
	res, err := byzantine.Run(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println("messages:", res.Messages, "rounds:", res.Rounds)
	for _, id := range res.Loyal() {
		fmt.Printf("general %d: %s\n", id, res.Generals[id].Decision)
	}
	fmt.Println("IC1 and IC2:", res.Verify() == nil)
	// Output:
	// messages: 9 rounds: 2
	// general 0: attack
	// general 1: attack
	// general 2: attack
	// IC1 and IC2: true
}

// SM(1) with three generals and a commander who equivocates: both
// lieutenants see both orders and choose alike (B9).
func ExampleRun_signed() {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals = byzantine.SM, 3
	cfg.Faulty = []byzantine.Traitor{{ID: 0, Strategy: byzantine.TwoFaced}}
	res, err := byzantine.Run(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	for _, id := range []byzantine.ID{1, 2} {
		fmt.Printf("general %d: V=%v decides %s\n", id, res.Generals[id].Values, res.Generals[id].Decision)
	}
	// Output:
	// general 1: V=[attack retreat] decides retreat
	// general 2: V=[retreat attack] decides retreat
}

// Three generals cannot tolerate one traitor with oral messages (B3).
func ExampleConfig_Validate() {
	cfg := byzantine.DefaultConfig()
	cfg.Generals = 3
	err := cfg.Validate()
	fmt.Println(errors.Is(err, byzantine.ErrUnsafe))
	fmt.Println(err)
	// Output:
	// true
	// byzantine: invalid config: byzantine: unsafe config: OM(1) needs n >= 3m+1 = 4 generals, got n = 3 (with oral messages more than two thirds of the generals must be loyal); set AllowUnsafe to run it anyway
}

func ExampleMajority() {
	fmt.Println(byzantine.Majority(byzantine.Vote, []byzantine.Order{"attack", "retreat", "attack"}))
	fmt.Println(byzantine.Majority(byzantine.Vote, []byzantine.Order{"attack", "retreat"}))
	fmt.Println(byzantine.Majority(byzantine.Median, []byzantine.Order{"3", "10", "7"}))
	// Output:
	// attack
	// retreat
	// 7
}

func ExampleChoice() {
	fmt.Println(byzantine.Choice(byzantine.Vote, []byzantine.Order{"attack"}))
	fmt.Println(byzantine.Choice(byzantine.Vote, nil))
	fmt.Println(byzantine.Choice(byzantine.Vote, []byzantine.Order{"attack", "retreat"}))
	// Output:
	// attack
	// retreat
	// retreat
}

// An unsafe run, allowed explicitly, shows Verify naming the generals.
func ExampleResult_Verify() {
	cfg := byzantine.DefaultConfig()
	cfg.Generals, cfg.AllowUnsafe = 3, true
	cfg.Faulty = []byzantine.Traitor{{ID: 2, Strategy: byzantine.FlipOrders}}
	res, _ := byzantine.Run(context.Background(), cfg)
	err := res.Verify()
	fmt.Println(errors.Is(err, byzantine.ErrIC2))
	var ve *byzantine.VerifyError
	if errors.As(err, &ve) {
		fmt.Println("disagree:", ve.Disagree)
	}
	// Output:
	// true
	// disagree: [1]
}
