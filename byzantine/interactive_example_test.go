package byzantine_test

import (
	"context"
	"fmt"

	"dlm/byzantine"
)

// Interactive consistency among four generals, one of them (general 2) a
// traitor who sends every general a different value of its own and lies
// when it relays the others': the loyal generals decide one vector, with
// each loyal general's own value at its index.
func ExampleRunInteractive() {
	cfg := byzantine.DefaultConfig() // OM(1), n = 4
	cfg.Faulty = []byzantine.Traitor{{ID: 2, Strategy: byzantine.FlipOrders}}
	ic := byzantine.InteractiveConfig{
		Config: cfg,
		Values: []byzantine.Order{"north", "east", "south", "west"},
		Equivocate: map[byzantine.ID]func(byzantine.ID) byzantine.Order{
			2: func(to byzantine.ID) byzantine.Order { return byzantine.Order(fmt.Sprintf("lie-to-%d", to)) },
		},
	}
	res, err := byzantine.RunInteractive(context.Background(), ic)
	if err != nil {
		panic(err)
	}
	for _, id := range res.Loyal() {
		fmt.Printf("general %d: %v\n", id, res.Vectors[id])
	}
	fmt.Println("messages:", res.Messages, "formula:", byzantine.LoyalMessages(cfg.Algorithm, 4, 1))
	fmt.Println("IC1 and IC2 of the vectors:", res.Verify() == nil)
	// Output:
	// general 0: [north east retreat west]
	// general 1: [north east retreat west]
	// general 3: [north east retreat west]
	// messages: 36 formula: 36
	// IC1 and IC2 of the vectors: true
}

// Every traitor behaviour of a finite adversary, in every instance of an
// interactive run among four generals with these private values: one
// exhaustive search of the one-commander run over the values covers them
// all.
func ExampleExhaustInteractive() {
	cfg := byzantine.DefaultConfig() // OM(1), n = 4
	ic := byzantine.InteractiveConfig{Config: cfg, Values: []byzantine.Order{"north", "east", "south", "west"}}
	res, err := byzantine.ExhaustInteractive(context.Background(), ic, byzantine.ExhaustOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("domain:", res.Domain)
	fmt.Println("runs:", res.Runs, "complete:", res.Complete, "violations:", res.Violations())
	// Output:
	// domain: [north east south west retreat]
	// runs: 401 complete: true violations: 0
}

// Why each loyal general decided each entry of its vector: explanations
// of an interactive run, in the generals' own ids.
func ExampleInteractiveResult_Explain() {
	cfg := byzantine.DefaultConfig() // OM(1), n = 4
	cfg.Faulty = []byzantine.Traitor{{ID: 2, Strategy: byzantine.FlipOrders}}
	cfg.Explain = []byzantine.ID{1}
	ic := byzantine.InteractiveConfig{Config: cfg, Values: []byzantine.Order{"north", "east", "south", "west"}}
	res, err := byzantine.RunInteractive(context.Background(), ic)
	if err != nil {
		panic(err)
	}
	for i, e := range res.Explain(1) {
		if i != 1 {
			fmt.Printf("entry %d = %s: %s\n", i, e.Decision, e.Why())
		}
	}
	// Output:
	// entry 0 = north: majority(north from 0, attack via 2, north via 3) = north
	// entry 2 = attack: majority(attack from 2, attack via 0, attack via 3) = attack
	// entry 3 = west: majority(west from 3, attack via 2, west via 0) = west
}
