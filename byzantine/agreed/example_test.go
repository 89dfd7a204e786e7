package agreed_test

import (
	"context"
	"fmt"

	"dlm/byzantine"
	"dlm/byzantine/agreed"
)

// Leader election among seven generals with OM(2): general 0 leads until
// it crashes in epoch 1, after sending its proposal; in epoch 2 its entry
// is missing and general 1 leads. Traitor 6 claims every other general is
// dead, which alone unseats nobody.
func ExampleTeam_Run_leader() {
	cfg := byzantine.DefaultConfig()
	cfg.Generals, cfg.MaxTraitors = 7, 2
	tm := agreed.Team{
		Config:     cfg,
		Candidates: []byzantine.ID{0, 1, 2, 3, 4, 5, 6},
		Adversary: func(e int) agreed.Adversary {
			adv := agreed.Adversary{
				Traitors: []byzantine.Traitor{{ID: 6, Strategy: byzantine.FlipOrders}},
				Propose: map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{
					6: func(_ byzantine.ID, p agreed.Proposal) agreed.Proposal {
						p.Heard = []bool{false, false, false, false, false, false, true}
						return p
					},
				},
			}
			if e == 1 {
				adv.Crashes = []byzantine.Crash{{ID: 0, Round: 1}}
			}
			return adv
		},
	}
	err := tm.Run(context.Background(), 3, func(ep agreed.Epoch) error {
		d := ep.Decisions[ep.Run.Loyal()[0]]
		fmt.Printf("epoch %d: leader %d, failed %v\n", ep.Epoch, d.Leader, d.FailedIDs())
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// epoch 0: leader 0, failed []
	// epoch 1: leader 0, failed []
	// epoch 2: leader 1, failed [0]
}

// Failure detection among four generals with SM(2): general 3 crashes in
// epoch 1 after sending its proposal; every loyal general declares it
// failed in epoch 2, although traitor 1 reports hearing from everyone,
// and says why.
func ExampleTeam_Run_failures() {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = byzantine.SM, 4, 2
	tm := agreed.Team{
		Config: cfg,
		Adversary: func(e int) agreed.Adversary {
			adv := agreed.Adversary{
				Traitors: []byzantine.Traitor{{ID: 1, Strategy: byzantine.Forge}},
				Propose: map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{
					1: func(_ byzantine.ID, p agreed.Proposal) agreed.Proposal {
						p.Heard = []bool{true, true, true, true}
						return p
					},
				},
			}
			if e == 1 {
				adv.Crashes = []byzantine.Crash{{ID: 3, Round: 1}}
			}
			return adv
		},
	}
	err := tm.Run(context.Background(), 3, func(ep agreed.Epoch) error {
		for _, id := range ep.Run.Loyal() {
			for _, f := range ep.Decisions[id].Failed {
				fmt.Printf("epoch %d, general %d: %d failed: %s\n", ep.Epoch, id, f.ID, f.Reason)
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// epoch 2, general 0: 3 failed: its agreed value "retreat" is missing or malformed (a loyal general's own proposal is always agreed)
	// epoch 2, general 2: 3 failed: its agreed value "retreat" is missing or malformed (a loyal general's own proposal is always agreed)
}

// Clock agreement among seven generals with OM(2): the loyal clocks
// differ by up to 4 ms; two traitors propose readings a year off, one
// ahead and one behind. Every loyal general adopts the median, which lies
// within the loyal readings.
func ExampleTeam_Run_clock() {
	const t0 = int64(1_800_000_000_000_000_000)
	year := int64(365 * 24 * 3600 * 1e9)
	cfg := byzantine.DefaultConfig()
	cfg.Generals, cfg.MaxTraitors = 7, 2
	tm := agreed.Team{
		Config: cfg,
		Clock:  func(_ int, id byzantine.ID) int64 { return t0 + int64(id)*1e6 },
		Adversary: func(int) agreed.Adversary {
			lie := func(off int64) func(byzantine.ID, agreed.Proposal) agreed.Proposal {
				return func(_ byzantine.ID, p agreed.Proposal) agreed.Proposal { p.Clock += off; return p }
			}
			return agreed.Adversary{
				Traitors: []byzantine.Traitor{{ID: 0, Strategy: byzantine.TwoFaced}, {ID: 5, Strategy: byzantine.Colluding}},
				Propose:  map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{0: lie(year), 5: lie(-year)},
			}
		},
	}
	err := tm.Run(context.Background(), 1, func(ep agreed.Epoch) error {
		for _, id := range ep.Run.Loyal() {
			d := ep.Decisions[id]
			fmt.Printf("general %d adopts t0%+d ms (median of %d readings)\n", id, (d.Clock-t0)/1e6, d.Readings)
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// general 1 adopts t0+3 ms (median of 7 readings)
	// general 2 adopts t0+3 ms (median of 7 readings)
	// general 3 adopts t0+3 ms (median of 7 readings)
	// general 4 adopts t0+3 ms (median of 7 readings)
	// general 6 adopts t0+3 ms (median of 7 readings)
}

// One picture: the agreed vector itself, each entry one general's
// proposal, the same for every loyal general.
func ExampleDecide() {
	vector := []byzantine.Order{
		agreed.Proposal{Candidate: true, Clock: 100, HasClock: true, Heard: []bool{true, true, true, false}}.Encode(),
		agreed.Proposal{Clock: 103, HasClock: true, Heard: []bool{true, true, true, false}}.Encode(),
		agreed.Proposal{Clock: 101, HasClock: true, Heard: []bool{true, true, true, false}}.Encode(),
		byzantine.Retreat, // general 3 sent nothing consistent
	}
	d := agreed.Decide(vector, 1)
	fmt.Println("picture:", d.Vector)
	fmt.Println("leader:", d.Leader, "clock:", d.Clock)
	for _, f := range d.Failed {
		fmt.Printf("failed %d: %s\n", f.ID, f.Reason)
	}
	// Output:
	// picture: [p1.c.100.7 p1.-.103.7 p1.-.101.7 retreat]
	// leader: 0 clock: 101
	// failed 3: its agreed value "retreat" is missing or malformed (a loyal general's own proposal is always agreed)
}
