package agreed_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dlm/byzantine"
	"dlm/byzantine/agreed"
)

const epochs = 5

// base is the loyal generals' clock in epoch 0; general i runs i ms ahead.
const base = int64(1_800_000_000_000_000_000)

func loyalClock(e int, id byzantine.ID) int64 {
	return base + int64(e)*int64(1e9) + int64(id)*int64(1e6)
}

func team(alg byzantine.Algorithm, n, m int, adv func(int) agreed.Adversary) agreed.Team {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = alg, n, m
	var cands []byzantine.ID
	for i := range n {
		cands = append(cands, byzantine.ID(i))
	}
	return agreed.Team{Config: cfg, Candidates: cands, Clock: loyalClock, Adversary: adv}
}

// deaf makes a proposal that claims to have heard from nobody but itself.
func deaf(self byzantine.ID, standing bool) func(byzantine.ID, agreed.Proposal) agreed.Proposal {
	return func(_ byzantine.ID, honest agreed.Proposal) agreed.Proposal {
		p := honest
		p.Candidate = standing
		p.Heard = make([]bool, len(honest.Heard))
		p.Heard[self] = true
		return p
	}
}

// extreme proposes a far-off clock, the same to everyone or, when
// equivocate, different for every receiver (which the agreement turns into
// no value at all).
func extreme(sign int64, equivocate bool) func(byzantine.ID, agreed.Proposal) agreed.Proposal {
	return func(to byzantine.ID, honest agreed.Proposal) agreed.Proposal {
		p := honest
		p.Candidate = false
		off := int64(0)
		if equivocate {
			off = int64(to)
		}
		if sign > 0 {
			p.Clock = math.MaxInt64 - off
		} else {
			p.Clock = math.MinInt64 + off
		}
		return p
	}
}

// scenario is one adversary of the uses, for a team of n with m faults.
type scenario struct {
	name string
	adv  func(n, m int) func(int) agreed.Adversary
	// traitorsStand is false when no traitor stands for leader: the
	// leader is then the lowest loyal general up.
	traitorsStand bool
}

// lowTraitors returns the m lowest ids: traitors there could unseat the
// loyal candidates above them if lying worked.
func lowTraitors(m int) []byzantine.ID {
	var ids []byzantine.ID
	for i := range m {
		ids = append(ids, byzantine.ID(i))
	}
	return ids
}

func scenarios() []scenario {
	return []scenario{
		{"lie-about-others", func(n, m int) func(int) agreed.Adversary {
			return func(e int) agreed.Adversary {
				strategies := []byzantine.Strategy{byzantine.FlipOrders, byzantine.TwoFaced, byzantine.Colluding}
				adv := agreed.Adversary{Propose: map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{}}
				for k, id := range lowTraitors(m) {
					adv.Traitors = append(adv.Traitors, byzantine.Traitor{ID: id, Strategy: strategies[(e+k)%len(strategies)]})
					adv.Propose[id] = deaf(id, false)
				}
				return adv
			}
		}, false},
		{"claim-loyal-dead-and-stand", func(n, m int) func(int) agreed.Adversary {
			return func(e int) agreed.Adversary {
				adv := agreed.Adversary{Propose: map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{}}
				for _, id := range []byzantine.ID{byzantine.ID(n - 1), byzantine.ID(n - 2)}[:m] {
					adv.Traitors = append(adv.Traitors, byzantine.Traitor{ID: id, Strategy: byzantine.TwoFaced})
					adv.Propose[id] = deaf(id, true)
				}
				return adv
			}
		}, true},
		{"extreme-clocks", func(n, m int) func(int) agreed.Adversary {
			return func(e int) agreed.Adversary {
				adv := agreed.Adversary{Propose: map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{}}
				for k, id := range lowTraitors(m) {
					adv.Traitors = append(adv.Traitors, byzantine.Traitor{ID: id, Strategy: byzantine.RandomOrders})
					adv.Propose[id] = extreme(int64(2*(k%2)-1), e%2 == 1)
				}
				return adv
			}
		}, false},
		{"crash-leader", func(n, m int) func(int) agreed.Adversary {
			return func(e int) agreed.Adversary {
				// A late traitor until epoch 2; the leader sends its value
				// in epoch 1, then crashes; with room for it, the next
				// leader crashes before sending anything in epoch 3.
				var adv agreed.Adversary
				if e <= 2 || n < 7 {
					adv.Traitors = []byzantine.Traitor{{ID: 2, Strategy: byzantine.Late}}
				}
				switch {
				case e == 1:
					adv.Crashes = []byzantine.Crash{{ID: 0, Round: 1}}
				case e == 3 && n >= 7:
					adv.Crashes = []byzantine.Crash{{ID: 1, Round: 0}}
				}
				return adv
			}
		}, false},
		{"stall-and-silence", func(n, m int) func(int) agreed.Adversary {
			return func(e int) agreed.Adversary {
				return agreed.Adversary{Traitors: []byzantine.Traitor{{ID: 0, Strategy: byzantine.Late}, {ID: 1, Strategy: byzantine.Silent}}[:m]}
			}
		}, false},
	}
}

// TestUsesUnderAdversaries runs every scenario in epochs with OM (n=7,
// m=2) and SM (n=4, m=2), checks every loyal general's decision in every
// epoch (Check), and the scenario's own expectations.
func TestUsesUnderAdversaries(t *testing.T) {
	for _, size := range []struct {
		alg  byzantine.Algorithm
		n, m int
	}{{byzantine.OM, 7, 2}, {byzantine.SM, 4, 2}, {byzantine.SM, 7, 2}} {
		for _, sc := range scenarios() {
			t.Run(fmt.Sprintf("%s/n=%d/%s", size.alg, size.n, sc.name), func(t *testing.T) {
				tm := team(size.alg, size.n, size.m, sc.adv(size.n, size.m))
				var prev *agreed.Epoch
				leaders := map[int]byzantine.ID{}
				err := tm.Run(t.Context(), epochs, func(ep agreed.Epoch) error {
					if err := agreed.Check(ep, prev, size.m); err != nil {
						return err
					}
					d := ep.Decisions[ep.Run.Loyal()[0]]
					leaders[ep.Epoch] = d.Leader
					trusted := agreed.Trusted(ep, prev)
					if !sc.traitorsStand && len(trusted) > 0 {
						// Every general stands; with no traitor standing, the
						// leader is the lowest general up that did not lie in
						// this epoch or the one before (a general that did may
						// rightly be reported silent).
						want := byzantine.ID(-1)
						for i := range size.n {
							id := byzantine.ID(i)
							if !slices.Contains(ep.Traitors, id) && (prev == nil || !slices.Contains(prev.Traitors, id)) && ep.Run.Config.Config.CrashRound(id) != 0 {
								want = id
								break
							}
						}
						if d.Leader != want {
							return fmt.Errorf("epoch %d: leader %d, want %d (failed %v)", ep.Epoch, d.Leader, want, d.Failed)
						}
					}
					lo, hi, _ := agreed.ClockBounds(ep, trusted)
					t.Logf("epoch %d: leader %d, failed %v, clock %+d ns from the loyal low (loyal range %d ns, guaranteed %v)",
						ep.Epoch, d.Leader, d.FailedIDs(), d.Clock-lo, hi-lo, agreed.ClockGuaranteed(d, trusted))
					e := ep
					prev = &e
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if sc.name == "crash-leader" && leaders[2] == 0 {
					t.Errorf("the leader crashed in epoch 1 and still leads in epoch 2")
				}
			})
		}
	}
}

// TestFailureDetectionWithinTwoEpochs: a loyal general that crashes after
// sending its value in epoch 2 is declared failed by every loyal general
// in epoch 3, and one that crashes before sending, in its own epoch.
func TestFailureDetectionWithinTwoEpochs(t *testing.T) {
	for _, tc := range []struct {
		alg   byzantine.Algorithm
		n, m  int
		round int
		want  int // first epoch in which it is declared failed
	}{
		{byzantine.OM, 7, 2, 1, 3},
		{byzantine.OM, 7, 2, 0, 2},
		{byzantine.SM, 4, 2, 2, 3},
		{byzantine.SM, 4, 2, 0, 2},
	} {
		t.Run(fmt.Sprintf("%s/n=%d/round=%d", tc.alg, tc.n, tc.round), func(t *testing.T) {
			tm := team(tc.alg, tc.n, tc.m, func(e int) agreed.Adversary {
				adv := agreed.Adversary{Traitors: []byzantine.Traitor{{ID: 1, Strategy: byzantine.TwoFaced}},
					Propose: map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{
						1: func(_ byzantine.ID, p agreed.Proposal) agreed.Proposal {
							p.Heard = slices.Repeat([]bool{true}, tc.n) // covers for the crashed
							return p
						}}}
				if e == 2 {
					adv.Crashes = []byzantine.Crash{{ID: 3, Round: tc.round}}
				}
				return adv
			})
			first := -1
			var prev *agreed.Epoch
			err := tm.Run(t.Context(), 5, func(ep agreed.Epoch) error {
				if err := agreed.Check(ep, prev, tc.m); err != nil {
					return err
				}
				for id, d := range ep.Decisions {
					declared := slices.Contains(d.FailedIDs(), 3)
					if declared && first < 0 {
						first = ep.Epoch
					}
					if ep.Epoch >= tc.want && !declared {
						return fmt.Errorf("epoch %d: general %d does not declare 3 failed: %v", ep.Epoch, id, d.Failed)
					}
				}
				e := ep
				prev = &e
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if first != tc.want {
				t.Errorf("declared failed first in epoch %d, want %d", first, tc.want)
			}
		})
	}
}

// TestClockBoundSM shows the bound of clock agreement with SM: with n <=
// 2m, m traitors proposing the same extreme readings move the median
// outside the loyal range (Check does not require it: ClockGuaranteed is
// false), while every loyal general still adopts the same value.
func TestClockBoundSM(t *testing.T) {
	tm := team(byzantine.SM, 4, 2, func(int) agreed.Adversary {
		return agreed.Adversary{
			Traitors: []byzantine.Traitor{{ID: 2, Strategy: byzantine.FlipOrders}, {ID: 3, Strategy: byzantine.FlipOrders}},
			Propose: map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{
				// The same extreme reading to everyone: an equivocating one
				// would be agreed as no value and not count.
				2: func(_ byzantine.ID, p agreed.Proposal) agreed.Proposal { p.Clock = math.MinInt64; return p },
				3: func(_ byzantine.ID, p agreed.Proposal) agreed.Proposal { p.Clock = math.MinInt64 + 100; return p },
			},
		}
	})
	err := tm.Run(t.Context(), 1, func(ep agreed.Epoch) error {
		if err := agreed.Check(ep, nil, 2); err != nil {
			return err
		}
		d := ep.Decisions[0]
		trusted := agreed.Trusted(ep, nil)
		if agreed.ClockGuaranteed(d, trusted) {
			t.Errorf("ClockGuaranteed with 2 extreme readings of 4")
		}
		if lo, _, _ := agreed.ClockBounds(ep, trusted); d.Clock >= lo {
			t.Errorf("clock %d within the loyal range: the test no longer shows the bound", d.Clock)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUsesRandomAdversaries draws traitors, strategies, lies and crashes
// at random, within m faults per epoch, and checks every epoch.
func TestUsesRandomAdversaries(t *testing.T) {
	for _, size := range []struct {
		alg  byzantine.Algorithm
		n, m int
	}{{byzantine.OM, 4, 1}, {byzantine.OM, 7, 2}, {byzantine.SM, 4, 2}, {byzantine.SM, 5, 3}} {
		for seed := range 6 {
			t.Run(fmt.Sprintf("%s/n=%d/seed=%d", size.alg, size.n, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(seed), 7))
				strategies := byzantine.OralStrategies()
				if size.alg == byzantine.SM {
					strategies = byzantine.Strategies()
				}
				var down []byzantine.ID
				tm := team(size.alg, size.n, size.m, func(e int) agreed.Adversary {
					adv := agreed.Adversary{Propose: map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{}}
					budget := size.m - len(down)
					if budget > 0 && r.IntN(4) == 0 {
						id := byzantine.ID(r.IntN(size.n))
						if !slices.Contains(down, id) {
							adv.Crashes = []byzantine.Crash{{ID: id, Round: r.IntN(size.m + 1)}}
							down = append(down, id)
							budget--
						}
					}
					for _, i := range r.Perm(size.n)[:budget] {
						id := byzantine.ID(i)
						if slices.Contains(down, id) {
							continue
						}
						adv.Traitors = append(adv.Traitors, byzantine.Traitor{ID: id, Strategy: strategies[r.IntN(len(strategies))]})
						switch r.IntN(3) {
						case 0:
							adv.Propose[id] = deaf(id, r.IntN(2) == 0)
						case 1:
							adv.Propose[id] = extreme(int64(2*r.IntN(2)-1), r.IntN(2) == 0)
						}
					}
					slices.SortFunc(adv.Traitors, func(a, b byzantine.Traitor) int { return int(a.ID - b.ID) })
					return adv
				})
				var prev *agreed.Epoch
				err := tm.Run(t.Context(), 6, func(ep agreed.Epoch) error {
					if err := agreed.Check(ep, prev, size.m); err != nil {
						return err
					}
					e := ep
					prev = &e
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   byzantine.Order
		n    int
		want error
	}{
		{"p1.c.12.7", 3, nil},
		{"p1.-.-.-", 3, nil},
		{"p1.-.-123.f0", 8, nil},
		{"retreat", 3, agreed.ErrProposal},
		{"p1.c.12.7", 5, agreed.ErrProposal}, // five generals take two digits
		{"p1.c.012.7", 3, agreed.ErrProposal},
		{"p1.x.12.7", 3, agreed.ErrProposal},
		{"p1.c.12.8", 3, agreed.ErrProposal},
		{"p1.c.12.F", 4, agreed.ErrProposal},
		{"p1.c.1e3.f", 4, agreed.ErrProposal},
	} {
		_, err := agreed.Parse(tc.in, tc.n)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("Parse(%q, %d) = %v, want %v", tc.in, tc.n, err, tc.want)
		}
	}
	p := agreed.Proposal{Candidate: true, Clock: -5, HasClock: true, Heard: []bool{true, false, true, true, false, true}}
	got, err := agreed.Parse(p.Encode(), 6)
	if err != nil || got.Clock != -5 || !slices.Equal(got.Heard, p.Heard) || !got.Candidate {
		t.Errorf("round trip of %+v: %+v, %v", p, got, err)
	}
	if l := len(agreed.Proposal{HasClock: true, Clock: math.MinInt64, Candidate: true, Heard: make([]bool, agreed.MaxGenerals)}.Encode()); l > byzantine.MaxOrderLen {
		t.Errorf("longest proposal is %d bytes, more than %d", l, byzantine.MaxOrderLen)
	}
}

// TestClockAgreementMeasured measures clock agreement under random
// adversaries whose traitors propose readings up to a year off (the same
// to everyone or not): the spread of the loyal generals' adopted values,
// and the adopted value's distance outside the loyal readings.
func TestClockAgreementMeasured(t *testing.T) {
	year := int64(365 * 24 * 3600 * 1e9)
	for _, size := range []struct {
		alg  byzantine.Algorithm
		n, m int
	}{{byzantine.OM, 7, 2}, {byzantine.OM, 10, 3}, {byzantine.SM, 5, 2}, {byzantine.SM, 4, 2}} {
		t.Run(fmt.Sprintf("%s/n=%d/m=%d", size.alg, size.n, size.m), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(size.n), uint64(size.m)))
			var maxSpread, maxOutside, guaranteedOutside int64
			epochsRun, guaranteed := 0, 0
			for seed := range 10 {
				tm := team(size.alg, size.n, size.m, func(e int) agreed.Adversary {
					adv := agreed.Adversary{Propose: map[byzantine.ID]func(byzantine.ID, agreed.Proposal) agreed.Proposal{}}
					for _, i := range r.Perm(size.n)[:size.m] {
						id := byzantine.ID(i)
						adv.Traitors = append(adv.Traitors, byzantine.Traitor{ID: id, Strategy: byzantine.FlipOrders})
						off, eq := (2*r.Int64N(2)-1)*r.Int64N(year), r.IntN(3) == 0
						adv.Propose[id] = func(to byzantine.ID, p agreed.Proposal) agreed.Proposal {
							p.Clock += off
							if eq {
								p.Clock += int64(to)
							}
							return p
						}
					}
					slices.SortFunc(adv.Traitors, func(a, b byzantine.Traitor) int { return int(a.ID - b.ID) })
					return adv
				})
				tm.Config.Seed = int64(seed)
				err := tm.Run(t.Context(), 3, func(ep agreed.Epoch) error {
					epochsRun++
					var lo, hi int64
					first := true
					for _, d := range ep.Decisions {
						if first || d.Clock < lo {
							lo = d.Clock
						}
						if first || d.Clock > hi {
							hi = d.Clock
						}
						first = false
					}
					maxSpread = max(maxSpread, hi-lo)
					trusted := agreed.Trusted(ep, nil)
					d := ep.Decisions[ep.Run.Loyal()[0]]
					llo, lhi, _ := agreed.ClockBounds(ep, trusted)
					out := max(llo-d.Clock, d.Clock-lhi, 0)
					maxOutside = max(maxOutside, out)
					if agreed.ClockGuaranteed(d, trusted) {
						guaranteed++
						guaranteedOutside = max(guaranteedOutside, out)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d epochs (%d with the guarantee): loyal adopted values spread %d ns; agreed value outside the loyal readings by at most %d ns (%d ns where guaranteed)",
				epochsRun, guaranteed, maxSpread, maxOutside, guaranteedOutside)
			if maxSpread != 0 || guaranteedOutside != 0 {
				t.Errorf("spread %d ns, outside the loyal range by %d ns where guaranteed: want 0 and 0", maxSpread, guaranteedOutside)
			}
			if size.alg == byzantine.OM && guaranteed != epochsRun {
				t.Errorf("OM within its bound: %d of %d epochs guaranteed, want all", guaranteed, epochsRun)
			}
		})
	}
}
