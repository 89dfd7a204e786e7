package byzantine_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dlm/byzantine"
)

// explainWant is a line expected in the explanation of general g in
// instance i.
type explainWant struct {
	g, i byzantine.ID
	line string
}

// TestInteractiveExplain explains every general in every instance and
// checks each explanation against the vectors and against the instance
// run alone: the decision explained is the vector's entry, every path
// (OM) or chain (SM) of instance i starts with its commander i in the
// generals' own ids, and the lines are those of the one-commander run of
// that instance with its ids renamed.
func TestInteractiveExplain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		alg    byzantine.Algorithm
		n, m   int
		faulty []byzantine.Traitor
		unsafe bool
		want   explainWant
	}{
		{name: "OM flip", alg: byzantine.OM, n: 4, m: 1, faulty: []byzantine.Traitor{{ID: 2, Strategy: byzantine.FlipOrders}},
			want: explainWant{0, 1, "1:2 attack"}},
		{name: "OM silent commander", alg: byzantine.OM, n: 4, m: 1, faulty: []byzantine.Traitor{{ID: 3, Strategy: byzantine.Silent}},
			want: explainWant{1, 3, "3     missing -> retreat (default)   majority(retreat, retreat, retreat) = retreat"}},
		{name: "SM two traitors", alg: byzantine.SM, n: 4, m: 2, faulty: []byzantine.Traitor{{ID: 0, Strategy: byzantine.Forge}, {ID: 3, Strategy: byzantine.TwoFaced}},
			want: explainWant{2, 1, "v1         first by v1:1 in round 0"}},
		{name: "OM below the bound", alg: byzantine.OM, n: 3, m: 1, faulty: []byzantine.Traitor{{ID: 2, Strategy: byzantine.FlipOrders}}, unsafe: true,
			want: explainWant{0, 1, "majority(v1, attack) = retreat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ic := icConfig(tc.alg, tc.n, tc.m, tc.faulty...)
			ic.Config.AllowUnsafe = tc.unsafe
			for g := range tc.n {
				ic.Config.Explain = append(ic.Config.Explain, byzantine.ID(g))
			}
			res := mustRunIC(t, ic)
			for g := range tc.n {
				id := byzantine.ID(g)
				ex := res.Explain(id)
				if len(ex) != tc.n {
					t.Fatalf("general %d: %d explanations, want %d", g, len(ex), tc.n)
				}
				for i, e := range ex {
					inst := byzantine.ID(i)
					if e == nil {
						t.Fatalf("general %d, instance %d: no explanation", g, i)
					}
					if vec, ok := res.Vectors[id]; ok && e.Decision != vec[i] {
						t.Errorf("general %d, instance %d: explains %q, vector holds %q", g, i, e.Decision, vec[i])
					}
					if e.Tree != nil {
						var walk func(n *byzantine.ExplainNode)
						walk = func(n *byzantine.ExplainNode) {
							if n.Path[0] != inst || slices.Contains(n.Path, id) {
								t.Errorf("general %d, instance %d: path %v, want it to start with %d and not name %d", g, i, n.Path, i, g)
							}
							for _, c := range n.Children {
								walk(c)
							}
						}
						walk(e.Tree)
					}
					for _, v := range e.Values {
						if v.Path[0] != inst || !strings.HasPrefix(v.Chain, string(v.Order)+":"+strconv.Itoa(i)) {
							t.Errorf("general %d, instance %d: chain %s (path %v), want it signed first by %d", g, i, v.Chain, v.Path, i)
						}
					}
					// The instance run alone, its ids renamed, explains the
					// same (a traitor acts in each instance as in a run of
					// its own: same seed, same strategy).
					one, err := byzantine.Run(t.Context(), ic.Instance(inst))
					if err != nil {
						t.Fatal(err)
					}
					alone := one.Generals[byzantine.InstanceID(inst, id)].Explanation.Relabel(func(x byzantine.ID) byzantine.ID { return byzantine.InstanceID(inst, x) })
					if got, want := strings.Join(e.Lines(), "\n"), strings.Join(alone.Lines(), "\n"); got != want {
						t.Errorf("general %d, instance %d:\n%s\nthe instance alone:\n%s", g, i, got, want)
					}
				}
			}
			lines := strings.Join(res.Explain(tc.want.g)[tc.want.i].Lines(), "\n")
			if !strings.Contains(lines, tc.want.line) {
				t.Errorf("general %d, instance %d lacks %q:\n%s", tc.want.g, tc.want.i, tc.want.line, lines)
			}
			if res.Explain(byzantine.ID(tc.n)) != nil {
				t.Errorf("Explain of a general not asked for is not nil")
			}
		})
	}
}

// TestInteractiveFaultReasons: every general counted faulty comes with
// why, in the generals' own ids: a traitor with its strategy, a crash, and
// what the loyal survivors saw over the network, the earliest round over
// the instances.
func TestInteractiveFaultReasons(t *testing.T) {
	t.Run("in memory", func(t *testing.T) {
		ic := icConfig(byzantine.OM, 7, 2, byzantine.Traitor{ID: 4, Strategy: byzantine.FlipOrders})
		ic.Config.Crashes = []byzantine.Crash{{ID: 1, Round: 1}}
		res := mustRunIC(t, ic)
		got := res.FaultReasons()
		want := map[byzantine.ID][]string{4: {"a traitor (flip)"}, 1: {"crashed"}}
		if !maps.EqualFunc(got, want, slices.Equal) {
			t.Errorf("reasons %v, want %v", got, want)
		}
	})
	t.Run("seen over a transport", func(t *testing.T) {
		ic := icConfig(byzantine.OM, 4, 1)
		results := map[byzantine.ID]byzantine.InteractiveGeneralResult{}
		for _, g := range []byzantine.ID{0, 1, 3} { // general 2 never reported
			r := byzantine.InteractiveGeneralResult{ID: g, Instances: make([]byzantine.GeneralResult, 4)}
			for i := range 4 {
				r.Instances[i] = byzantine.GeneralResult{ID: byzantine.InstanceID(byzantine.ID(i), g), Loyal: true, Decision: ic.Values[i]}
			}
			results[g] = r
		}
		// In instance i general 2 has id InstanceID(i, 2).
		results[1].Instances[0].Faults = []byzantine.PeerFault{{ID: 2, Kind: byzantine.PeerAbsent, Round: 1}}
		results[1].Instances[3].Faults = []byzantine.PeerFault{{ID: 2, Kind: byzantine.PeerAbsent, Round: 0}}
		results[0].Instances[2].Faults = []byzantine.PeerFault{{ID: 0, Kind: byzantine.PeerGone, Round: 1}}
		res := byzantine.AssembleInteractive(ic, results)
		want := []string{"crashed", "general 0 saw it gone from round 1", "general 1 saw it absent from round 0"}
		if got := res.FaultReasons(); len(got) != 1 || !slices.Equal(got[2], want) {
			t.Errorf("reasons %v, want general 2: %q", got, want)
		}
		if got := res.FaultyGenerals(); !slices.Equal(got, []byzantine.ID{2}) {
			t.Errorf("faulty %v, want [2]", got)
		}
	})
}
