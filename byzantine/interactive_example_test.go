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
