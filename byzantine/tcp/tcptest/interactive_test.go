package tcptest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
	"dlm/byzantine/tcp/tcptest"
)

// runInteractive runs sc as interactive consistency (every general the
// commander of its own value "v<id>") over real Nodes on loopback, the
// traitors attacking timing and links as in tcptest.Run, and returns the
// loyal generals' results.
func runInteractive(t *testing.T, sc tcptest.Scenario) map[byzantine.ID]byzantine.InteractiveGeneralResult {
	t.Helper()
	g := tcptest.Place(t, sc)
	keys, nodes, c := g.Keys, g.Nodes, g.Cluster
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.RoundTimeout = sc.Algorithm, sc.N, sc.M, sc.Round
	ic := byzantine.InteractiveConfig{Config: cfg}
	for i := range sc.N {
		ic.Values = append(ic.Values, byzantine.Order(fmt.Sprintf("v%d", i)))
	}
	start := time.Now().Add(max(time.Second, sc.Round))
	run := tcp.RunID(c, tcp.InteractiveTermsOf(cfg, start))
	g.ServeDeaf(run)
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(sc.M+4)*sc.Round+30*time.Second)
	defer cancel()
	results := make(map[byzantine.ID]byzantine.InteractiveGeneralResult)
	var mu sync.Mutex
	errs := make([]error, sc.N)
	var wg sync.WaitGroup
	for i, nd := range nodes {
		if nd == nil {
			continue
		}
		id := byzantine.ID(i)
		tr, isTraitor := sc.Traitor(id)
		if !isTraitor {
			wg.Go(func() {
				r, err := tcp.RunInteractiveNode(ctx, nd, ic, keys[i], c, start)
				errs[i] = err
				mu.Lock()
				results[id] = r
				mu.Unlock()
			})
			continue
		}
		wg.Go(func() {
			tic := ic
			tic.Config.RunID = run
			if tr.Strategy != "" {
				tic.Config.Faulty = []byzantine.Traitor{{ID: id, Strategy: tr.Strategy}}
			}
			tstart := start
			if tr.Attack == tcptest.Ahead {
				tstart = start.Add(-sc.Round)
			}
			tcp.RunInteractiveOver(ctx, nd, tcptest.Wrap(nd, tr, run, sc.N), tic, byzantine.Keyring{Private: keys[i], Public: tcptest.PublicKeys(keys)}, c, tstart)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%v: general %d: %v", sc, i, err)
		}
	}
	return results
}

// TestInteractiveAdversary runs interactive consistency against the TCP
// adversary: a general down, traitors that withhold markers, stall or
// never read after the handshake, reset their connections, replay, run a
// round ahead, each also lying. After every run that kept the schedule
// with at most m faults it checks the vector conditions (IC1: one vector;
// IC2: each loyal general's own value at its index) and that every loyal
// general reports the visible traitors among the faults it saw.
func TestInteractiveAdversary(t *testing.T) {
	light := tcptest.LightRound()
	scs := []tcptest.Scenario{
		{Name: "absent-om", Algorithm: byzantine.OM, N: 7, M: 2, Round: light, Absent: []byzantine.ID{4},
			Traitors: []tcptest.TraitorSpec{{ID: 1, Attack: tcptest.Lie, Strategy: byzantine.TwoFaced}}},
		{Name: "absent-sm", Algorithm: byzantine.SM, N: 4, M: 2, Round: light, Absent: []byzantine.ID{0},
			Traitors: []tcptest.TraitorSpec{{ID: 2, Attack: tcptest.Lie, Strategy: byzantine.FlipOrders}}},
		{Name: "withhold-om", Algorithm: byzantine.OM, N: 7, M: 2, Round: light,
			Traitors: []tcptest.TraitorSpec{{ID: 5, Attack: tcptest.WithholdMarkers, Victims: []byzantine.ID{2}, From: 1, Strategy: byzantine.Colluding}}},
		{Name: "stall-sm", Algorithm: byzantine.SM, N: 4, M: 2, Round: light,
			Traitors: []tcptest.TraitorSpec{{ID: 3, Attack: tcptest.StallHandshakes}, {ID: 1, Attack: tcptest.Lie, Strategy: byzantine.TwoFaced}}},
		{Name: "stop-reading-om", Algorithm: byzantine.OM, N: 7, M: 2, Round: light,
			Traitors: []tcptest.TraitorSpec{{ID: 6, Attack: tcptest.StopReading}, {ID: 0, Attack: tcptest.Replay, Strategy: byzantine.FlipOrders}}},
		{Name: "reset-sm", Algorithm: byzantine.SM, N: 5, M: 2, Round: light,
			Traitors: []tcptest.TraitorSpec{{ID: 2, Attack: tcptest.Reset, From: 1, Strategy: byzantine.RandomOrders}, {ID: 4, Attack: tcptest.Ahead, Strategy: byzantine.TwoFaced}}},
	}
	inconclusive := 0
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			results := runInteractive(t, sc)
			faulty := slices.Clone(sc.Absent)
			for _, tr := range sc.Traitors {
				faulty = append(faulty, tr.ID)
			}
			union := slices.Clone(faulty)
			late := false
			var loyal []byzantine.ID
			for id, r := range results {
				loyal = append(loyal, id)
				if o := r.Overran(); len(o) > 0 {
					late = true
					t.Logf("%v: general %d ran out of time in rounds %v", sc, id, o)
				}
				var seen []byzantine.ID
				for _, f := range r.Faults() {
					seen = append(seen, f.ID)
					if !slices.Contains(union, f.ID) {
						union = append(union, f.ID)
						t.Logf("%v: general %d counts loyal general %d as faulty (%+v)", sc, id, f.ID, r.Faults())
					}
				}
				for _, tr := range sc.Traitors {
					victim := tr.Attack != tcptest.WithholdMarkers || slices.Contains(tr.Victims, id)
					if tr.Attack.Visible() && victim && !slices.Contains(seen, tr.ID) {
						t.Errorf("%v: general %d does not report traitor %d (%s) among the faults it saw %+v", sc, id, tr.ID, tr.Attack, r.Faults())
					}
				}
				for _, a := range sc.Absent {
					if !slices.Contains(seen, a) {
						t.Errorf("%v: general %d does not report absent general %d", sc, id, a)
					}
				}
			}
			slices.Sort(loyal)
			if late || len(union) > sc.M {
				t.Logf("%v: inconclusive (out of time %v, faulty %v)", sc, late, union)
				inconclusive++
				return
			}
			ref := results[loyal[0]].Vector
			for _, id := range loyal {
				v := results[id].Vector
				if !slices.Equal(v, ref) {
					t.Errorf("%v: IC1 broken: general %d decided %v, general %d %v", sc, id, v, loyal[0], ref)
				}
				for _, j := range loyal {
					if want := byzantine.Order(fmt.Sprintf("v%d", j)); v[j] != want {
						t.Errorf("%v: IC2 broken: general %d holds %q for loyal general %d", sc, id, v[j], j)
					}
				}
			}
			t.Logf("%v: vector %v", sc, ref)
		})
	}
	if inconclusive > len(scs)/3 {
		t.Errorf("%d of %d runs were inconclusive: too few were checked", inconclusive, len(scs))
	}
}
