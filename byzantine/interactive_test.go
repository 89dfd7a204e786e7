package byzantine_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/byzantine"
)

// icValues returns n distinct private values v0, v1, ...
func icValues(n int) []byzantine.Order {
	vs := make([]byzantine.Order, n)
	for i := range vs {
		vs[i] = byzantine.Order(fmt.Sprintf("v%d", i))
	}
	return vs
}

func icConfig(alg byzantine.Algorithm, n, m int, faulty ...byzantine.Traitor) byzantine.InteractiveConfig {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.Faulty = alg, n, m, faulty
	return byzantine.InteractiveConfig{Config: cfg, Values: icValues(n)}
}

func mustRunIC(t *testing.T, ic byzantine.InteractiveConfig) *byzantine.InteractiveResult {
	t.Helper()
	res, err := byzantine.RunInteractive(t.Context(), ic)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestInteractiveVectorConditions runs interactive consistency with every
// traitor set of at most m generals, each set under every strategy (all
// traitors alike, then mixed), for OM and SM at and above their bounds,
// and checks IC1 and IC2 of the vectors, and B1 in every instance.
func TestInteractiveVectorConditions(t *testing.T) {
	for _, tc := range []struct {
		alg  byzantine.Algorithm
		n, m int
	}{
		{byzantine.OM, 4, 1},
		{byzantine.OM, 5, 1},
		{byzantine.OM, 7, 2},
		{byzantine.SM, 3, 1},
		{byzantine.SM, 4, 2},
		{byzantine.SM, 5, 3},
	} {
		t.Run(fmt.Sprintf("%s/n=%d/m=%d", tc.alg, tc.n, tc.m), func(t *testing.T) {
			strategies := byzantine.Strategies()
			if tc.alg == byzantine.OM {
				strategies = byzantine.OralStrategies()
			}
			runs := 0
			subsets(tc.n, tc.m, func(ids []byzantine.ID) {
				var mixes [][]byzantine.Traitor
				for _, s := range strategies {
					var ts []byzantine.Traitor
					for _, id := range ids {
						ts = append(ts, byzantine.Traitor{ID: id, Strategy: s})
					}
					mixes = append(mixes, ts)
				}
				if len(ids) > 1 {
					var ts []byzantine.Traitor
					for k, id := range ids {
						ts = append(ts, byzantine.Traitor{ID: id, Strategy: strategies[(k+int(id))%len(strategies)]})
					}
					mixes = append(mixes, ts)
				}
				for _, ts := range mixes {
					runs++
					ic := icConfig(tc.alg, tc.n, tc.m, ts...)
					ic.Config.Seed = int64(runs)
					res := mustRunIC(t, ic)
					if err := res.Verify(); err != nil {
						t.Fatalf("traitors %v: %v", ts, err)
					}
					for i, inst := range res.Instances {
						if err := inst.Verify(); err != nil {
							t.Fatalf("traitors %v: instance %d: %v", ts, i, err)
						}
					}
					if got, want := len(res.Loyal()), tc.n-len(ids); got != want {
						t.Fatalf("traitors %v: %d vectors, want %d", ts, got, want)
					}
				}
			})
			t.Logf("%d runs", runs)
		})
	}
}

// TestInteractiveLoyalMessages checks the message count of loyal runs
// against n times the one-commander formula.
func TestInteractiveLoyalMessages(t *testing.T) {
	for _, tc := range []struct {
		alg  byzantine.Algorithm
		n, m int
		want int
	}{
		{byzantine.OM, 4, 1, 4 * 9},
		{byzantine.OM, 7, 2, 7 * 156},
		{byzantine.SM, 4, 2, 4 * 9},
		{byzantine.SM, 6, 1, 6 * 25},
	} {
		t.Run(fmt.Sprintf("%s/n=%d/m=%d", tc.alg, tc.n, tc.m), func(t *testing.T) {
			res := mustRunIC(t, icConfig(tc.alg, tc.n, tc.m))
			if got := byzantine.LoyalMessages(tc.alg, tc.n, tc.m); got != tc.want {
				t.Errorf("LoyalMessages = %d, want %d", got, tc.want)
			}
			if res.Messages != tc.want {
				t.Errorf("messages = %d, want %d", res.Messages, tc.want)
			}
			for _, id := range res.Loyal() {
				if !slices.Equal(res.Vectors[id], icValues(tc.n)) {
					t.Errorf("general %d decided %v, want %v", id, res.Vectors[id], icValues(tc.n))
				}
			}
		})
	}
}

// TestInteractiveEquivocation: traitors that send every general a
// different value as commanders of their own instances, and lie as relays
// elsewhere, still leave the loyal generals with one vector.
func TestInteractiveEquivocation(t *testing.T) {
	for _, tc := range []struct {
		alg    byzantine.Algorithm
		n, m   int
		faulty []byzantine.Traitor
	}{
		{byzantine.OM, 7, 2, []byzantine.Traitor{{ID: 0, Strategy: byzantine.TwoFaced}, {ID: 4, Strategy: byzantine.Colluding}}},
		{byzantine.SM, 4, 2, []byzantine.Traitor{{ID: 1, Strategy: byzantine.Forge}, {ID: 3, Strategy: byzantine.TwoFaced}}},
		{byzantine.SM, 7, 2, []byzantine.Traitor{{ID: 2, Strategy: byzantine.Replay}, {ID: 6, Strategy: byzantine.FlipOrders}}},
	} {
		t.Run(fmt.Sprintf("%s/n=%d", tc.alg, tc.n), func(t *testing.T) {
			ic := icConfig(tc.alg, tc.n, tc.m, tc.faulty...)
			ic.Equivocate = map[byzantine.ID]func(byzantine.ID) byzantine.Order{}
			for _, tr := range tc.faulty {
				ic.Equivocate[tr.ID] = func(to byzantine.ID) byzantine.Order {
					return byzantine.Order(fmt.Sprintf("lie-%d-to-%d", tr.ID, to))
				}
			}
			res := mustRunIC(t, ic)
			if err := res.Verify(); err != nil {
				t.Fatal(err)
			}
			ref := res.Vectors[res.Loyal()[0]]
			for _, tr := range tc.faulty {
				t.Logf("entry of traitor %d: %s", tr.ID, ref[tr.ID])
			}
		})
	}
}

// TestInteractiveCrashes: crashed generals decide no vector; a general
// crashed before it sent its value gets the default entry everywhere.
func TestInteractiveCrashes(t *testing.T) {
	ic := icConfig(byzantine.OM, 7, 2, byzantine.Traitor{ID: 1, Strategy: byzantine.RandomOrders})
	ic.Config.Crashes = []byzantine.Crash{{ID: 5, Round: 0}}
	res := mustRunIC(t, ic)
	if err := res.Verify(); err != nil {
		t.Fatal(err)
	}
	if got, want := res.Loyal(), []byzantine.ID{0, 2, 3, 4, 6}; !slices.Equal(got, want) {
		t.Fatalf("loyal survivors %v, want %v", got, want)
	}
	for _, id := range res.Loyal() {
		if got := res.Vectors[id][5]; got != byzantine.Retreat {
			t.Errorf("general %d holds %q for the crashed general 5, want %q", id, got, byzantine.Retreat)
		}
		if res.Heard[id][5] {
			t.Errorf("general %d heard from the crashed general 5", id)
		}
		if !res.Heard[id][0] {
			t.Errorf("general %d did not hear from general 0", id)
		}
	}
	if res.Heard[5] != nil {
		t.Errorf("crashed general 5 has a heard row %v", res.Heard[5])
	}
}

// TestInteractiveVerifierCatches shows the verifier failing below the
// bound: OM with three generals and an equivocating traitor.
func TestInteractiveVerifierCatches(t *testing.T) {
	ic := icConfig(byzantine.OM, 3, 1, byzantine.Traitor{ID: 2, Strategy: byzantine.FlipOrders})
	ic.Config.AllowUnsafe = true
	res := mustRunIC(t, ic)
	err := res.Verify()
	if !errors.Is(err, byzantine.ErrVectorIC2) {
		t.Fatalf("Verify = %v, want ErrVectorIC2", err)
	}
	var ve *byzantine.VectorError
	if !errors.As(err, &ve) || len(ve.Entries) == 0 {
		t.Fatalf("no offending entries in %v", err)
	}
	if !strings.Contains(err.Error(), "want \"v") {
		t.Errorf("error %q does not name the expected value", err)
	}
}

func TestInteractiveValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*byzantine.InteractiveConfig)
		want string
	}{
		{"values", func(ic *byzantine.InteractiveConfig) { ic.Values = ic.Values[:2] }, "2 values for 4 generals"},
		{"empty value", func(ic *byzantine.InteractiveConfig) { ic.Values[1] = "" }, "value of general 1"},
		{"explain out of range", func(ic *byzantine.InteractiveConfig) { ic.Config.Explain = []byzantine.ID{4} }, "explain: general 4 out of range"},
		{"explain too large", func(ic *byzantine.InteractiveConfig) {
			ic.Config.Generals, ic.Config.MaxTraitors, ic.Values = 13, 4, icValues(13)
			ic.Config.Explain = []byzantine.ID{1}
		}, "explaining 1 generals in each of 13 instances"},
		{"loyal equivocates", func(ic *byzantine.InteractiveConfig) {
			ic.Equivocate = map[byzantine.ID]func(byzantine.ID) byzantine.Order{1: func(byzantine.ID) byzantine.Order { return "x" }}
		}, "not listed among the traitors"},
		{"unsafe", func(ic *byzantine.InteractiveConfig) { ic.Config.Generals, ic.Values = 3, ic.Values[:3] }, "n >= 3m+1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ic := icConfig(byzantine.OM, 4, 1)
			tc.edit(&ic)
			err := ic.Validate()
			if !errors.Is(err, byzantine.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig with %q", err, tc.want)
			}
		})
	}
}

// TestInteractiveOverEndpoints runs the instances concurrently over a
// timed transport (one endpoint per general, shared by its n instances)
// and checks that every general decides the vector the in-memory run
// decides.
func TestInteractiveOverEndpoints(t *testing.T) {
	for _, tc := range []struct {
		alg    byzantine.Algorithm
		n, m   int
		faulty []byzantine.Traitor
		crash  []byzantine.Crash
		// exact: the traitors' timing cannot matter, so the vectors equal
		// the in-memory run's. A late traitor's message may arrive before
		// the end-of-round marker of its general's last instance, and
		// count, as if sent in time.
		exact bool
	}{
		{byzantine.OM, 4, 1, []byzantine.Traitor{{ID: 2, Strategy: byzantine.TwoFaced}}, nil, true},
		{byzantine.OM, 7, 2, []byzantine.Traitor{{ID: 0, Strategy: byzantine.Silent}}, []byzantine.Crash{{ID: 3, Round: 1}}, true},
		{byzantine.SM, 4, 2, []byzantine.Traitor{{ID: 1, Strategy: byzantine.Forge}, {ID: 3, Strategy: byzantine.FlipOrders}}, nil, true},
		{byzantine.SM, 4, 2, []byzantine.Traitor{{ID: 1, Strategy: byzantine.Replay}, {ID: 3, Strategy: byzantine.Late}}, nil, false},
		{byzantine.OM, 7, 2, []byzantine.Traitor{{ID: 4, Strategy: byzantine.Late}, {ID: 6, Strategy: byzantine.Colluding}}, nil, false},
	} {
		t.Run(fmt.Sprintf("%s/n=%d/%v", tc.alg, tc.n, tc.faulty), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ic := icConfig(tc.alg, tc.n, tc.m, tc.faulty...)
				ic.Config.Crashes = tc.crash
				want := mustRunIC(t, ic)
				net := newChanNet(tc.n)
				priv, pub := byzantine.DeriveKeys(ic.Config.Seed, tc.n)
				results := make(map[byzantine.ID]byzantine.InteractiveGeneralResult)
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := time.Now()
				for i := range tc.n {
					id := byzantine.ID(i)
					wg.Go(func() {
						r, err := byzantine.RunInteractiveGeneral(t.Context(), ic, id, byzantine.Keyring{Private: priv[i], Public: pub}, chanEndpoint{net, id}, start)
						if err != nil && !errors.Is(err, byzantine.ErrCrashed) {
							t.Errorf("general %d: %v", id, err)
							return
						}
						if err == nil {
							mu.Lock()
							results[id] = r
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				got := byzantine.AssembleInteractive(ic, results)
				if err := got.Verify(); err != nil {
					t.Fatal(err)
				}
				if ids := got.OutOfTime(); len(ids) > 0 {
					t.Fatalf("out of time: %v", ids)
				}
				if !tc.exact {
					return
				}
				if !slices.Equal(got.Loyal(), want.Loyal()) {
					t.Fatalf("loyal %v, want %v", got.Loyal(), want.Loyal())
				}
				for _, id := range want.Loyal() {
					if !slices.Equal(got.Vectors[id], want.Vectors[id]) {
						t.Errorf("general %d: vector %v over endpoints, %v in memory", id, got.Vectors[id], want.Vectors[id])
					}
					if !slices.Equal(got.Heard[id], want.Heard[id]) {
						t.Errorf("general %d: heard %v over endpoints, %v in memory", id, got.Heard[id], want.Heard[id])
					}
				}
			})
		})
	}
}
