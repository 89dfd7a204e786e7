package tcptest_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
	"dlm/byzantine/tcp/tcptest"
)

// TestUnreachableGeneralsReported: some loyal generals listen on other
// ports than the cluster file's, so every dial to them is refused while
// their own dials get through: their markers and relays arrive, and
// nothing anybody sends them ever leaves the sender. A general that could
// never send to a peer must count it among the faults (absent), so that
// with more than m of them it says so rather than claim a clean decision
// (exit 0): before, nobody reported them, and with m+1 of them loyal
// generals decided retreat against a loyal commander's attack, seeing no
// fault.
func TestUnreachableGeneralsReported(t *testing.T) {
	for _, tc := range []struct {
		alg  byzantine.Algorithm
		n, m int
		cut  []int
	}{
		{byzantine.OM, 4, 1, []int{3}},
		{byzantine.OM, 4, 1, []int{2, 3}},
		{byzantine.SM, 4, 1, []int{2, 3}},
	} {
		t.Run(fmt.Sprintf("%v-n%d-m%d-cut%v", tc.alg, tc.n, tc.m, tc.cut), func(t *testing.T) {
			t.Parallel()
			res := runWithCut(t, tc.alg, tc.n, tc.m, tc.cut)
			for i, r := range res {
				if slices.Contains(tc.cut, i) || len(r.Overran) > 0 {
					continue // a cut general sees everyone late; an overrun proves nothing
				}
				faulty := r.FaultyPeers()
				for _, c := range tc.cut {
					if !slices.Contains(faulty, byzantine.ID(c)) {
						t.Errorf("general %d could never send to %d and does not count it faulty (faults %+v, decided %s)", i, c, r.Faults, r.Decision)
					}
				}
				for _, f := range r.Faults {
					if slices.Contains(tc.cut, int(f.ID)) && f.Kind != byzantine.PeerAbsent {
						t.Errorf("general %d counts %d as %s, want %s (never reached)", i, f.ID, f.Kind, byzantine.PeerAbsent)
					}
				}
				if len(faulty) <= tc.m && r.Decision != byzantine.Attack {
					t.Errorf("general %d decided %s against the loyal commander's attack, seeing %d fault(s) %+v (at most m: a clean decision)", i, r.Decision, len(faulty), r.Faults)
				}
			}
		})
	}
}

// runWithCut runs alg with n loyal generals over real Nodes, the generals
// in cut unreachable (their cluster addresses refuse connections), and
// returns every general's result.
func runWithCut(t *testing.T, alg byzantine.Algorithm, n, m int, cut []int) []byzantine.GeneralResult {
	t.Helper()
	keys := tcptest.NewKeys(t, n)
	nodes := tcptest.ListenAll(t, keys, n)
	addrs := tcptest.Addrs(nodes)
	for _, i := range cut {
		addrs[i] = tcptest.RefusedAddr(t) // dials to its cluster address are refused
	}
	c := tcptest.ClusterOf(addrs, keys)
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.RoundTimeout = alg, n, m, tcptest.LightRound()
	start := time.Now().Add(500 * time.Millisecond)
	res := make([]byzantine.GeneralResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Go(func() { res[i], _, errs[i] = tcp.RunNode(t.Context(), nd, cfg, keys[i], c, start) })
	}
	wg.Wait()
	for i, r := range res {
		if errs[i] != nil {
			t.Fatalf("general %d: %v", i, errs[i])
		}
		t.Logf("general %d: decided %s, faults %+v, overran %v, accepted %d", i, r.Decision, r.Faults, r.Overran, r.Stats.Accepted)
	}
	return res
}
