package byzantine_test

import (
	"slices"
	"testing"

	"dlm/byzantine"
)

// received returns the orders general id believed, by path, from a trace.
func received(res *byzantine.Result, id byzantine.ID) map[string]byzantine.Order {
	got := map[string]byzantine.Order{}
	for _, ev := range res.Trace {
		if ev.Message.To == id && ev.Rejected == "" && ev.Fault != byzantine.Drop {
			got[ev.Message.Chain()[len(ev.Message.Order):]] = ev.Message.Order
		}
	}
	return got
}

func multiset(m map[string]byzantine.Order) []byzantine.Order {
	var out []byzantine.Order
	for _, o := range m {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// TestPaperFigureOM1TraitorousLieutenant is Lamport, Shostak and Pease's
// figure of OM(1) with four generals and a traitorous lieutenant, and the
// first worked example of B6: A and B each receive the commander's order
// twice and C's lie once, and obey the commander.
func TestPaperFigureOM1TraitorousLieutenant(t *testing.T) {
	for _, s := range []byzantine.Strategy{byzantine.FlipOrders, byzantine.TwoFaced, byzantine.Colluding} {
		t.Run(string(s), func(t *testing.T) {
			cfg := config(byzantine.OM, 4, 1, byzantine.Traitor{ID: 3, Strategy: s})
			cfg.Trace = true
			res := mustRun(t, cfg)
			for _, id := range []byzantine.ID{1, 2} {
				got := received(res, id)
				other := 3 - id
				if got[":0"] != byzantine.Attack || got[":0:"+string(rune('0'+other))] != byzantine.Attack {
					t.Errorf("lieutenant %d received %v, want attack from the commander twice", id, got)
				}
				if len(got) != 3 {
					t.Errorf("lieutenant %d received %d values, want 3", id, len(got))
				}
				if d := res.Generals[id].Decision; d != byzantine.Attack {
					t.Errorf("lieutenant %d decided %s, want attack", id, d)
				}
			}
			if err := res.Verify(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPaperFigureOM1TraitorousCommander is the figure of OM(1) with four
// generals and a traitorous commander, and the second worked example of B6:
// the three lieutenants end with the same multiset of values and so take
// the same decision.
func TestPaperFigureOM1TraitorousCommander(t *testing.T) {
	for _, s := range []byzantine.Strategy{byzantine.TwoFaced, byzantine.RandomOrders, byzantine.Colluding} {
		t.Run(string(s), func(t *testing.T) {
			cfg := config(byzantine.OM, 4, 1, byzantine.Traitor{ID: 0, Strategy: s})
			cfg.Trace = true
			res := mustRun(t, cfg)
			want := multiset(received(res, 1))
			for _, id := range []byzantine.ID{2, 3} {
				if got := multiset(received(res, id)); !slices.Equal(got, want) {
					t.Errorf("lieutenant %d holds %v, lieutenant 1 holds %v: want the same multiset", id, got, want)
				}
			}
			if err := res.Verify(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestB6WorkedExample checks B6's example with the exact values of the
// two-faced traitors, who invert the order for even-numbered receivers: C
// (3) tells A (1) the truth and lies "retreat" to B (2); a two-faced
// commander sends attack to 1 and 3 and retreat to 2.
func TestB6WorkedExample(t *testing.T) {
	t.Run("C is the traitor", func(t *testing.T) {
		cfg := config(byzantine.OM, 4, 1, byzantine.Traitor{ID: 3, Strategy: byzantine.TwoFaced})
		cfg.Trace = true
		res := mustRun(t, cfg)
		got := multiset(received(res, 2))
		if want := []byzantine.Order{byzantine.Attack, byzantine.Attack, byzantine.Retreat}; !slices.Equal(got, want) {
			t.Errorf("B holds %v, want %v", got, want)
		}
		if d := res.Generals[2].Decision; d != byzantine.Attack {
			t.Errorf("B decided %s, want attack", d)
		}
	})
	t.Run("the commander is the traitor", func(t *testing.T) {
		cfg := config(byzantine.OM, 4, 1, byzantine.Traitor{ID: 0, Strategy: byzantine.TwoFaced})
		cfg.Trace = true
		res := mustRun(t, cfg)
		for _, id := range []byzantine.ID{1, 2, 3} {
			got := multiset(received(res, id))
			if want := []byzantine.Order{byzantine.Attack, byzantine.Attack, byzantine.Retreat}; !slices.Equal(got, want) {
				t.Errorf("lieutenant %d holds %v, want %v", id, got, want)
			}
			if d := res.Generals[id].Decision; d != byzantine.Attack {
				t.Errorf("lieutenant %d decided %s, want attack (majority of the same multiset)", id, d)
			}
		}
	})
}

// TestPaperFigureSM1ThreeGenerals is the figure of SM(1) with three generals
// and a traitorous commander: both lieutenants detect the equivocation
// (V = {attack, retreat}) and take the same choice.
func TestPaperFigureSM1ThreeGenerals(t *testing.T) {
	cfg := config(byzantine.SM, 3, 1, byzantine.Traitor{ID: 0, Strategy: byzantine.TwoFaced})
	cfg.Trace = true
	res := mustRun(t, cfg)
	for _, id := range []byzantine.ID{1, 2} {
		v := slices.Clone(res.Generals[id].Values)
		slices.Sort(v)
		if want := []byzantine.Order{byzantine.Attack, byzantine.Retreat}; !slices.Equal(v, want) {
			t.Errorf("lieutenant %d: V = %v, want %v (equivocation detected)", id, v, want)
		}
	}
	if err := res.Verify(); err != nil {
		t.Error(err)
	}
	if res.Messages != 4 {
		t.Errorf("messages = %d, want 4 (v:0 twice, v:0:1 and v:0:2)", res.Messages)
	}
}

// TestB9WorkedExample: a traitorous commander sends attack to B and retreat
// to C; both end with {attack, retreat} and choose alike. A traitorous
// lieutenant that alters a relayed order is caught by its broken signature.
func TestB9WorkedExample(t *testing.T) {
	t.Run("equivocating commander", func(t *testing.T) {
		cfg := config(byzantine.SM, 4, 1, byzantine.Traitor{ID: 0, Strategy: byzantine.TwoFaced})
		res := mustRun(t, cfg)
		for _, id := range []byzantine.ID{1, 2, 3} {
			v := slices.Clone(res.Generals[id].Values)
			slices.Sort(v)
			if want := []byzantine.Order{byzantine.Attack, byzantine.Retreat}; !slices.Equal(v, want) {
				t.Errorf("lieutenant %d: V = %v, want %v", id, v, want)
			}
		}
		if err := res.Verify(); err != nil {
			t.Error(err)
		}
	})
	t.Run("lieutenant alters a relayed order", func(t *testing.T) {
		cfg := config(byzantine.SM, 4, 1, byzantine.Traitor{ID: 3, Strategy: byzantine.Forge})
		res := mustRun(t, cfg)
		for _, id := range []byzantine.ID{1, 2} {
			if v := res.Generals[id].Values; !slices.Equal(v, []byzantine.Order{byzantine.Attack}) {
				t.Errorf("lieutenant %d: V = %v, want [attack] (the altered order ignored)", id, v)
			}
		}
		if res.Rejected[byzantine.RejectForged] == 0 {
			t.Errorf("rejected = %v, want forged messages", res.Rejected)
		}
		if err := res.Verify(); err != nil {
			t.Error(err)
		}
	})
}
