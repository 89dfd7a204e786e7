package byzantine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"dlm/byzantine"
)

// TestExplainOM: the tree holds the value of every path, marks missing
// messages as the default, and its root majority is the decision.
func TestExplainOM(t *testing.T) {
	tests := []struct {
		name     string
		n, m     int
		faulty   []byzantine.Traitor
		explain  byzantine.ID
		nodes    int
		missing  []string // paths whose message never came
		wantRoot byzantine.Order
	}{
		{"n4m1 two-faced lieutenant", 4, 1, []byzantine.Traitor{{ID: 3, Strategy: byzantine.TwoFaced}}, 2, 3, nil, byzantine.Attack},
		{"n4m1 silent lieutenant", 4, 1, []byzantine.Traitor{{ID: 3, Strategy: byzantine.Silent}}, 1, 3, []string{"0:3"}, byzantine.Attack},
		{"n7m2 silent commander", 7, 2, []byzantine.Traitor{{ID: 0, Strategy: byzantine.Silent}}, 4, 1 + 5 + 20, []string{"0"}, byzantine.Retreat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := byzantine.DefaultConfig()
			cfg.Generals, cfg.MaxTraitors, cfg.Faulty = tt.n, tt.m, tt.faulty
			cfg.Explain = []byzantine.ID{tt.explain}
			res := mustRun(t, cfg)
			e := res.Generals[tt.explain].Explanation
			if e == nil || e.Tree == nil {
				t.Fatalf("general %d has no explanation", tt.explain)
			}
			var count int
			var missing []string
			var walk func(n *byzantine.ExplainNode)
			walk = func(n *byzantine.ExplainNode) {
				count++
				if n.Missing {
					missing = append(missing, byzantine.Message{Path: n.Path}.Chain()[1:])
					if n.Value != byzantine.Retreat {
						t.Errorf("missing path %v has value %s, want the default RETREAT", n.Path, n.Value)
					}
				}
				if slices.Contains(n.Path[1:], tt.explain) {
					t.Errorf("path %v names the lieutenant itself", n.Path)
				}
				for _, c := range n.Children {
					walk(c)
				}
			}
			walk(e.Tree)
			if count != tt.nodes {
				t.Errorf("%d nodes, want %d", count, tt.nodes)
			}
			if len(missing) > 0 && len(tt.missing) > 0 && !slices.Contains(missing, tt.missing[0]) {
				t.Errorf("missing = %v, want %v among them", missing, tt.missing)
			}
			if len(tt.missing) == 0 && len(missing) > 0 {
				t.Errorf("missing = %v, want none", missing)
			}
			if e.Tree.Majority != e.Decision || e.Decision != res.Generals[tt.explain].Decision || e.Decision != tt.wantRoot {
				t.Errorf("root majority %s, explanation decision %s, decision %s; want %s", e.Tree.Majority, e.Decision, res.Generals[tt.explain].Decision, tt.wantRoot)
			}
		})
	}
}

// TestExplainSM: V comes with the first chain that brought each order.
func TestExplainSM(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals = byzantine.SM, 3
	cfg.Faulty = []byzantine.Traitor{{ID: 0, Strategy: byzantine.TwoFaced}}
	cfg.Explain = []byzantine.ID{1, 2}
	res := mustRun(t, cfg)
	want := map[byzantine.ID][]byzantine.ExplainValue{
		1: {{Order: byzantine.Attack, Chain: "attack:0", Path: []byzantine.ID{0}, Round: 0}, {Order: byzantine.Retreat, Chain: "retreat:0:2", Path: []byzantine.ID{0, 2}, Round: 1}},
		2: {{Order: byzantine.Retreat, Chain: "retreat:0", Path: []byzantine.ID{0}, Round: 0}, {Order: byzantine.Attack, Chain: "attack:0:1", Path: []byzantine.ID{0, 1}, Round: 1}},
	}
	for id, w := range want {
		e := res.Generals[id].Explanation
		if e == nil || !slices.EqualFunc(e.Values, w, func(a, b byzantine.ExplainValue) bool {
			return a.Order == b.Order && a.Chain == b.Chain && a.Round == b.Round && slices.Equal(a.Path, b.Path)
		}) {
			t.Errorf("general %d explanation %+v, want values %v", id, e, w)
			continue
		}
		if lines := strings.Join(e.Lines(), "\n"); !strings.Contains(lines, "choice(V) = retreat") {
			t.Errorf("general %d lines lack the choice:\n%s", id, lines)
		}
	}
}

// Lieutenant 2 of the paper's first OM(1) figure: lieutenant 3 lies to it,
// and the tree shows the majority that outvotes the lie.
func ExampleExplanation_Lines() {
	cfg := byzantine.DefaultConfig()
	cfg.Faulty = []byzantine.Traitor{{ID: 3, Strategy: byzantine.TwoFaced}}
	cfg.Explain = []byzantine.ID{2}
	res, err := byzantine.Run(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	for _, line := range res.Generals[2].Explanation.Lines() {
		fmt.Println(line)
	}
	// Output:
	// 0     attack   majority(attack, attack, retreat) = attack
	//   0:1 attack
	//   0:3 retreat
}

// TestTraceShowsMissingMessages: with a silent lieutenant, the trace of an
// OM run records the messages the loyal lieutenants never received.
func TestTraceShowsMissingMessages(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Faulty = []byzantine.Traitor{{ID: 3, Strategy: byzantine.Silent}}
	cfg.Trace = true
	res := mustRun(t, cfg)
	var missing []string
	for _, ev := range res.Trace {
		if ev.Fault == byzantine.Missing {
			missing = append(missing, ev.String())
		}
	}
	want := []string{
		"round 1: 3 -> 1  0:3  [missing: RETREAT by default]",
		"round 1: 3 -> 2  0:3  [missing: RETREAT by default]",
	}
	if !slices.Equal(missing, want) {
		t.Errorf("missing in the trace:\n%s\nwant:\n%s", strings.Join(missing, "\n"), strings.Join(want, "\n"))
	}
}
