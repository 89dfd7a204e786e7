package byzantine_test

import (
	"fmt"
	"testing"

	"dlm/byzantine"
)

const (
	A = byzantine.Attack
	R = byzantine.Retreat
)

func TestMajority(t *testing.T) {
	tests := []struct {
		name    string
		variant byzantine.MajorityVariant
		in      []byzantine.Order
		want    byzantine.Order
	}{
		{"B5.1 strict majority", byzantine.Vote, []byzantine.Order{A, R, A}, A},
		{"B5.1 tie gives RETREAT", byzantine.Vote, []byzantine.Order{A, R, A, R}, R},
		{"B5.1 no majority of three values gives RETREAT", byzantine.Vote, []byzantine.Order{"x", "y", "z"}, R},
		{"B5.1 majority of a third value", byzantine.Vote, []byzantine.Order{"hold", "hold", A}, "hold"},
		{"B5.1 empty gives RETREAT", byzantine.Vote, nil, R},
		{"B5.2 median of numbers", byzantine.Median, []byzantine.Order{"10", "2", "7"}, "7"},
		{"B5.2 numeric not lexicographic", byzantine.Median, []byzantine.Order{"9", "10", "100"}, "10"},
		{"B5.2 lower median of an even count", byzantine.Median, []byzantine.Order{"4", "1", "3", "2"}, "2"},
		{"B5.2 words", byzantine.Median, []byzantine.Order{R, A, A}, A},
		{"B5.2 empty gives RETREAT", byzantine.Median, nil, R},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := byzantine.Majority(tt.variant, append([]byzantine.Order(nil), tt.in...)); got != tt.want {
				t.Errorf("Majority(%s, %v) = %q, want %q", tt.variant, tt.in, got, tt.want)
			}
		})
	}
}

func TestChoice(t *testing.T) {
	tests := []struct {
		name    string
		variant byzantine.MajorityVariant
		in      []byzantine.Order
		want    byzantine.Order
	}{
		{"B8 single value", byzantine.Vote, []byzantine.Order{A}, A},
		{"B8 single value repeated", byzantine.Vote, []byzantine.Order{"hold", "hold"}, "hold"},
		{"B8 empty gives RETREAT", byzantine.Vote, nil, R},
		{"B8 several values give RETREAT with vote", byzantine.Vote, []byzantine.Order{A, R}, R},
		{"B8 several values give RETREAT regardless of order", byzantine.Vote, []byzantine.Order{R, A, "hold"}, R},
		{"B8 several values give RETREAT with median too (two decide, MaxValues)", byzantine.Median, []byzantine.Order{"5", "1", "3", "3"}, R},
		{"B8 single value with median", byzantine.Median, []byzantine.Order{"3", "3"}, "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := byzantine.Choice(tt.variant, tt.in); got != tt.want {
				t.Errorf("Choice(%s, %v) = %q, want %q", tt.variant, tt.in, got, tt.want)
			}
		})
	}
}

func TestFlip(t *testing.T) {
	for in, want := range map[byzantine.Order]byzantine.Order{A: R, R: A, "hold": A} {
		if got := byzantine.Flip(in); got != want {
			t.Errorf("Flip(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPlainMajorityB2 reproduces B2: the plain majority vote works with
// loyal generals and fails with a traitor, a killed messenger and a spy.
func TestPlainMajorityB2(t *testing.T) {
	// Three generals A (0), B (1), C (2) broadcast proposals; deliver(i, j)
	// is what j receives from i, or "" when the messenger was killed.
	type deliverFn func(from, to int, proposal byzantine.Order) byzantine.Order
	honest := func(_, _ int, p byzantine.Order) byzantine.Order { return p }
	tests := []struct {
		name      string
		proposals [3]byzantine.Order
		loyal     []int
		deliver   deliverFn
		want      map[int]byzantine.Order // "" = cannot decide
		agree     bool
	}{
		{
			name:      "all loyal: attack, retreat, attack -> everyone attacks",
			proposals: [3]byzantine.Order{A, R, A},
			loyal:     []int{0, 1, 2},
			deliver:   honest,
			want:      map[int]byzantine.Order{0: A, 1: A, 2: A},
			agree:     true,
		},
		{
			name:      "traitor C tells A attack and B retreat -> A attacks, B retreats",
			proposals: [3]byzantine.Order{A, R, A},
			loyal:     []int{0, 1},
			deliver: func(from, to int, p byzantine.Order) byzantine.Order {
				if from == 2 {
					return map[int]byzantine.Order{0: A, 1: R}[to]
				}
				return p
			},
			want: map[int]byzantine.Order{0: A, 1: R},
		},
		{
			name:      "C's messengers killed -> A and B hold one vote each and cannot decide",
			proposals: [3]byzantine.Order{A, R, A},
			loyal:     []int{0, 1},
			deliver: func(from, _ int, p byzantine.Order) byzantine.Order {
				if from == 2 {
					return ""
				}
				return p
			},
			want: map[int]byzantine.Order{0: "", 1: ""},
		},
		{
			name:      "a spy replaces C's messenger to B -> loyal A and B disagree",
			proposals: [3]byzantine.Order{A, R, A},
			loyal:     []int{0, 1, 2},
			deliver: func(from, to int, p byzantine.Order) byzantine.Order {
				if from == 2 && to == 1 {
					return R
				}
				return p
			},
			want: map[int]byzantine.Order{0: A, 1: R, 2: A},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[int]byzantine.Order{}
			for _, me := range tt.loyal {
				votes := []byzantine.Order{tt.proposals[me]}
				for from := range 3 {
					if from == me {
						continue
					}
					if v := tt.deliver(from, me, tt.proposals[from]); v != "" {
						votes = append(votes, v)
					}
				}
				d, ok := byzantine.PlainVote(votes)
				if !ok {
					d = ""
				}
				got[me] = d
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("decisions = %v, want %v", got, tt.want)
			}
			agree := true
			for _, d := range got {
				if d == "" || d != got[tt.loyal[0]] {
					agree = false
				}
			}
			if agree != tt.agree {
				t.Errorf("loyal generals agree = %v, want %v", agree, tt.agree)
			}
		})
	}
}
