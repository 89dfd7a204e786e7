package tcp

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
)

// runInteractiveScenario runs sc as interactive consistency (every
// general the commander of its own value "v<id>") against real Nodes, the
// traitors attacking timing and links through the same pieces as
// TestAdversary, and returns the loyal generals' results (nil for the
// others).
func runInteractiveScenario(t *testing.T, sc Scenario) map[byzantine.ID]byzantine.InteractiveGeneralResult {
	t.Helper()
	keys := newKeys(t, sc.N)
	nodes := make([]*Node, sc.N)
	addrs := make([]string, sc.N)
	deaf := make(map[int]*deafSlot)
	for i := range sc.N {
		id := byzantine.ID(i)
		tr, isTraitor := sc.traitor(id)
		switch {
		case slices.Contains(sc.Absent, id):
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addrs[i] = ln.Addr().String()
			ln.Close()
		case isTraitor && tr.Attack == StallHandshakes:
			addrs[i] = newStallListener(t).ln.Addr().String()
		case isTraitor && tr.Attack == StopReading:
			deaf[i] = newDeafSlot(t, id, keys[i])
			addrs[i] = deaf[i].addr
		default:
			nodes[i] = listenAt(t, "127.0.0.1:0", id, keys[i])
			addrs[i] = nodes[i].Addr()
		}
	}
	c := clusterOf(addrs, keys)
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.RoundTimeout = sc.Algorithm, sc.N, sc.M, sc.Round
	ic := byzantine.InteractiveConfig{Config: cfg}
	for i := range sc.N {
		ic.Values = append(ic.Values, byzantine.Order(fmt.Sprintf("v%d", i)))
	}
	start := time.Now().Add(max(time.Second, sc.Round))
	run := RunID(c, start, cfg.Seq)
	for _, s := range deaf {
		s.serve(run)
	}
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
		tr, isTraitor := sc.traitor(id)
		if !isTraitor {
			wg.Go(func() {
				r, err := RunInteractiveNode(ctx, nd, ic, keys[i], c, start)
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
			if tr.Attack == Ahead {
				tstart = start.Add(-sc.Round)
			}
			runInteractiveOver(ctx, nd, &attacker{Node: nd, spec: tr}, tic, byzantine.Keyring{Private: keys[i], Public: publicKeys(keys)}, c, tstart)
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
	light := lightRound()
	scs := []Scenario{
		{Name: "absent-om", Algorithm: byzantine.OM, N: 7, M: 2, Round: light, Absent: []byzantine.ID{4},
			Traitors: []TraitorSpec{{ID: 1, Attack: Lie, Strategy: byzantine.TwoFaced}}},
		{Name: "absent-sm", Algorithm: byzantine.SM, N: 4, M: 2, Round: light, Absent: []byzantine.ID{0},
			Traitors: []TraitorSpec{{ID: 2, Attack: Lie, Strategy: byzantine.FlipOrders}}},
		{Name: "withhold-om", Algorithm: byzantine.OM, N: 7, M: 2, Round: light,
			Traitors: []TraitorSpec{{ID: 5, Attack: WithholdMarkers, Victims: []byzantine.ID{2}, From: 1, Strategy: byzantine.Colluding}}},
		{Name: "stall-sm", Algorithm: byzantine.SM, N: 4, M: 2, Round: light,
			Traitors: []TraitorSpec{{ID: 3, Attack: StallHandshakes}, {ID: 1, Attack: Lie, Strategy: byzantine.TwoFaced}}},
		{Name: "stop-reading-om", Algorithm: byzantine.OM, N: 7, M: 2, Round: light,
			Traitors: []TraitorSpec{{ID: 6, Attack: StopReading}, {ID: 0, Attack: Replay, Strategy: byzantine.FlipOrders}}},
		{Name: "reset-sm", Algorithm: byzantine.SM, N: 5, M: 2, Round: light,
			Traitors: []TraitorSpec{{ID: 2, Attack: Reset, From: 1, Strategy: byzantine.RandomOrders}, {ID: 4, Attack: Ahead, Strategy: byzantine.TwoFaced}}},
	}
	inconclusive := 0
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			results := runInteractiveScenario(t, sc)
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
					victim := tr.Attack != WithholdMarkers || slices.Contains(tr.Victims, id)
					if tr.Attack.visible() && victim && !slices.Contains(seen, tr.ID) {
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
