package byzantine_test

import (
	"errors"
	"reflect"
	"testing"

	"dlm/byzantine"
)

// TestMemoryFaultHooks: each fault hook of the in-memory transport does
// what it says, is counted, and the receivers treat its effect as the spec
// demands. By A1 a loyal general whose links fail counts as faulty, so the
// configs mark such generals among the m traitors where their messages are
// lost or altered.
func TestMemoryFaultHooks(t *testing.T) {
	duplicatesRejected := func(t *testing.T, res *byzantine.Result) {
		if got, want := res.Rejected[byzantine.RejectDuplicate], res.Faults["duplicate"]; got != want || got == 0 {
			t.Errorf("rejected %d duplicates, transport duplicated %d", got, want)
		}
	}
	tests := []struct {
		name   string
		cfg    func() byzantine.Config
		check  func(t *testing.T, res *byzantine.Result)
		verify bool
	}{
		{
			name: "drop: every message of general 2 lost",
			cfg: func() byzantine.Config {
				c := config(byzantine.OM, 4, 1, byzantine.Traitor{ID: 2, Strategy: byzantine.FlipOrders})
				c.Faults.Hook = func(m byzantine.Message) byzantine.Fault {
					if m.From == 2 {
						return byzantine.Drop
					}
					return byzantine.Deliver
				}
				return c
			},
			check: func(t *testing.T, res *byzantine.Result) {
				if got, want := res.Faults["drop"], res.Generals[2].Stats.Sent; got != want {
					t.Errorf("dropped %d, want all %d messages of general 2", got, want)
				}
			},
			verify: true,
		},
		{
			name: "partition: general 3 cut off",
			cfg: func() byzantine.Config {
				c := config(byzantine.OM, 4, 1, byzantine.Traitor{ID: 3, Strategy: byzantine.TwoFaced})
				c.Faults.Partition = [][]byzantine.ID{{0, 1, 2}, {3}}
				return c
			},
			check: func(t *testing.T, res *byzantine.Result) {
				if res.Generals[3].Stats.Accepted != 0 {
					t.Errorf("general 3 received %d messages across the partition", res.Generals[3].Stats.Accepted)
				}
				if res.Faults["drop"] == 0 {
					t.Error("no message dropped by the partition")
				}
			},
			verify: true,
		},
		{
			name: "duplicate: copies rejected as duplicates",
			cfg: func() byzantine.Config {
				c := config(byzantine.OM, 7, 2)
				c.Faults.Duplicate = 0.3
				return c
			},
			check:  duplicatesRejected,
			verify: true,
		},
		{
			name: "duplicate: SM copies rejected as duplicates",
			cfg: func() byzantine.Config {
				c := config(byzantine.SM, 5, 2)
				c.Faults.Duplicate = 0.3
				return c
			},
			check:  duplicatesRejected,
			verify: true,
		},
		{
			name: "corrupt: SM detects every altered order (A4)",
			cfg: func() byzantine.Config {
				c := config(byzantine.SM, 6, 2)
				c.Faults.Corrupt = 0.2
				return c
			},
			check: func(t *testing.T, res *byzantine.Result) {
				if got, want := res.Rejected[byzantine.RejectForged], res.Faults["corrupt"]; got != want || got == 0 {
					t.Errorf("rejected %d forged, transport corrupted %d", got, want)
				}
				for id, g := range res.Generals {
					for _, v := range g.Values {
						if v != byzantine.Attack {
							t.Errorf("general %d believed a corrupted order %q", id, v)
						}
					}
				}
			},
			verify: true,
		},
		{
			name: "corrupt: OM believes a spy (why A1 counts links as faulty)",
			cfg: func() byzantine.Config {
				c := config(byzantine.OM, 4, 1)
				c.Faults.Hook = func(m byzantine.Message) byzantine.Fault {
					if m.From == 0 && m.To != 1 {
						return byzantine.Corrupt
					}
					return byzantine.Deliver
				}
				return c
			},
			check: func(t *testing.T, res *byzantine.Result) {
				if res.Rejected[byzantine.RejectForged] != 0 || res.Faults["corrupt"] != 2 {
					t.Errorf("faults = %v, rejected = %v", res.Faults, res.Rejected)
				}
				if res.Verify() == nil {
					t.Error("two corrupted links from a loyal commander went unnoticed by Verify")
				}
			},
		},
		{
			name: "delay: messages after their round are rejected as late (A3)",
			cfg: func() byzantine.Config {
				c := config(byzantine.OM, 7, 2)
				c.Faults.Hook = func(m byzantine.Message) byzantine.Fault {
					if m.From == 4 {
						return byzantine.Delay
					}
					return byzantine.Deliver
				}
				c.Faulty = []byzantine.Traitor{{ID: 4, Strategy: byzantine.FlipOrders}}
				return c
			},
			check: func(t *testing.T, res *byzantine.Result) {
				if got, want := res.Rejected[byzantine.RejectLate], res.Faults["delay"]; got != want || got == 0 {
					t.Errorf("rejected %d late, transport delayed %d", got, want)
				}
			},
			verify: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, tt.cfg())
			tt.check(t, res)
			if tt.verify {
				if err := res.Verify(); err != nil {
					t.Errorf("Verify() = %v, want nil", err)
				}
			}
		})
	}
}

// TestDeterministic: a run is a function of its config: the same seed gives
// the same result, trace included (house style rule 11).
func TestDeterministic(t *testing.T) {
	for _, alg := range []byzantine.Algorithm{byzantine.OM, byzantine.SM} {
		t.Run(string(alg), func(t *testing.T) {
			cfg := config(alg, 7, 2, byzantine.Traitor{ID: 0, Strategy: byzantine.RandomOrders}, byzantine.Traitor{ID: 5, Strategy: byzantine.Colluding})
			cfg.Faults = byzantine.Faults{Drop: 0.05, Duplicate: 0.05, Delay: 0.05}
			cfg.Trace = true
			cfg.Seed = 42
			a, b := mustRun(t, cfg), mustRun(t, cfg)
			if !reflect.DeepEqual(a, b) {
				t.Fatal("two runs with seed 42 differ")
			}
			cfg.Seed = 43
			if c := mustRun(t, cfg); reflect.DeepEqual(a.Trace, c.Trace) {
				t.Error("seeds 42 and 43 gave the same trace")
			}
		})
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := contextWithCancel(t)
	cancel()
	_, err := byzantine.Run(ctx, config(byzantine.OM, 4, 1))
	if err == nil || !isCanceled(err) || !errors.Is(err, byzantine.ErrStopped) {
		t.Fatalf("Run with a cancelled context = %v, want ErrStopped and context.Canceled", err)
	}
}
