package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGeneralsNodeInteractiveProcesses runs one interactive-consistency
// run as separate processes on loopback, one "dlm generals node
// --interactive" per general, each knowing only its own --value: every
// loyal general prints the same vector, with each loyal general's own value
// at its index, and exits 0. In the SM run one general is never started:
// the others count it as a fault (absent), hold RETREAT (no value) for it
// and still exit 0, one fault being within m.
func TestGeneralsNodeInteractiveProcesses(t *testing.T) {
	t.Parallel() // the processes mostly wait for their start and rounds
	values := []string{"north", "east", "south", "west"}
	for _, tc := range []struct {
		name    string
		args    []string
		traitor int // -1: none
		down    int // a general never started; -1: none
		want    []string
	}{
		{"OM flip traitor", []string{"--algorithm", "om", "--faulty", "2:flip"}, 2, -1, []string{"north", "east", "attack", "west"}},
		{"SM absent general", []string{"--algorithm", "sm"}, -1, 3, []string{"north", "east", "south", "retreat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, clusterFile := generalsCluster(t, 4)
			start := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			type outcome struct {
				ID          int      `json:"id"`
				Loyal       bool     `json:"loyal"`
				Value       string   `json:"value"`
				Vector      []string `json:"vector"`
				FaultyPeers []int    `json:"faulty_peers"`
				Verdict     string   `json:"verdict"`
			}
			outs := make([]outcome, 4)
			stdouts, errs := generalNodes(ctx, dlmBin(), dir, clusterFile, start, 4, tc.down, func(i int) []string {
				args := append([]string{"--interactive", "--value", values[i], "-n", "4", "-m", "1", "--round-timeout", "1s"}, tc.args...)
				if i != 1 {
					args = append(args, "--json") // general 1 prints text
				}
				return args
			})
			text1 := string(stdouts[1])
			stdouts[1] = nil
			decodeOutcomes(stdouts, errs, outs)
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			for i, o := range outs {
				if i == tc.down || i == 1 {
					continue
				}
				if o.ID != i || o.Value != values[i] || o.Verdict != "ok" {
					t.Errorf("general %d: %+v", i, o)
				}
				if i == tc.traitor {
					if o.Loyal {
						t.Errorf("general %d reports loyal; it was --faulty", i)
					}
					continue
				}
				if !slices.Equal(o.Vector, tc.want) {
					t.Errorf("general %d decided %v, want %v", i, o.Vector, tc.want)
				}
				if tc.down >= 0 && !slices.Equal(o.FaultyPeers, []int{tc.down}) {
					t.Errorf("general %d saw faulty peers %v, want [%d]", i, o.FaultyPeers, tc.down)
				}
			}
			want := fmt.Sprintf("general 1 (loyal, value east) decides the vector [%s]", strings.Join(tc.want, " "))
			if !strings.Contains(text1, want) {
				t.Errorf("general 1 printed:\n%s\nwant %q", text1, want)
			}
		})
	}
}
