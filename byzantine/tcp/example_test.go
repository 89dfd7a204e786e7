package tcp_test

import (
	"context"
	"fmt"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// Four generals over loopback TCP, each with its own key, one of them a
// two-faced traitor (here as goroutines; tcp.CommandSpawner starts
// processes instead).
func ExampleLaunch() {
	cfg := byzantine.DefaultConfig()
	cfg.Faulty = []byzantine.Traitor{{ID: 3, Strategy: byzantine.TwoFaced}}
	res, err := tcp.Launch(context.Background(), cfg, tcp.LocalSpawner())
	if err != nil {
		panic(err)
	}
	fmt.Println("messages:", res.Messages)
	for _, id := range []byzantine.ID{1, 2} {
		fmt.Printf("general %d: %s\n", id, res.Generals[id].Decision)
	}
	fmt.Println("IC1 and IC2:", res.Verify() == nil)
	// Output:
	// messages: 9
	// general 1: attack
	// general 2: attack
	// IC1 and IC2: true
}
