package tcp_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// TestInteractiveOverTCP runs interactive consistency over loopback TCP,
// every general with its own key and listener, the n instances of each
// sharing its connections, and checks the vector conditions.
func TestInteractiveOverTCP(t *testing.T) {
	for _, tc := range []struct {
		alg    byzantine.Algorithm
		n, m   int
		faulty []byzantine.Traitor
		crash  []byzantine.Crash
	}{
		{byzantine.OM, 4, 1, nil, nil},
		{byzantine.OM, 7, 2, []byzantine.Traitor{{ID: 0, Strategy: byzantine.TwoFaced}, {ID: 5, Strategy: byzantine.Colluding}}, nil},
		{byzantine.SM, 4, 2, []byzantine.Traitor{{ID: 1, Strategy: byzantine.Forge}}, []byzantine.Crash{{ID: 3, Round: 1}}},
	} {
		t.Run(fmt.Sprintf("%s/n=%d", tc.alg, tc.n), func(t *testing.T) {
			cfg := byzantine.DefaultConfig()
			cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.Faulty, cfg.Crashes = tc.alg, tc.n, tc.m, tc.faulty, tc.crash
			cfg.RoundTimeout = 5 * time.Second // generous: rounds end on the markers
			values := make([]byzantine.Order, tc.n)
			for i := range values {
				values[i] = byzantine.Order(fmt.Sprintf("v%d", i))
			}
			ic := byzantine.InteractiveConfig{Config: cfg, Values: values}
			res, err := tcp.LaunchInteractive(t.Context(), ic)
			if err != nil {
				t.Fatal(err)
			}
			if late := res.OutOfTime(); len(late) > 0 {
				t.Fatalf("generals %v out of time", late)
			}
			if err := res.Verify(); err != nil {
				t.Fatal(err)
			}
			want := tc.n - len(tc.faulty) - len(tc.crash)
			if len(res.Loyal()) != want {
				t.Fatalf("%d vectors, want %d", len(res.Loyal()), want)
			}
			for _, id := range res.Loyal() {
				for _, j := range res.Loyal() {
					if !slices.Contains(res.Loyal(), j) {
						continue
					}
					if res.Vectors[id][j] != values[j] {
						t.Errorf("general %d holds %q for loyal %d", id, res.Vectors[id][j], j)
					}
				}
			}
			if len(tc.faulty) == 0 && len(tc.crash) == 0 {
				if want := byzantine.LoyalMessages(tc.alg, tc.n, tc.m); res.Messages != want {
					t.Errorf("messages %d, want %d", res.Messages, want)
				}
			}
		})
	}
}
