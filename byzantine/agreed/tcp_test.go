package agreed_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/agreed"
	"dlm/byzantine/tcp"
	"dlm/internal/ports"
)

// tcpTraitor is what one traitor does in one epoch over TCP.
type tcpTraitor struct {
	strategy byzantine.Strategy
	// propose, when set, is the proposal it sends each general.
	propose func(to byzantine.ID, honest agreed.Proposal) agreed.Proposal
	// stall makes it start its epoch one and a half rounds late.
	stall bool
}

// tcpPlan is the adversary of a team over TCP, epoch by epoch.
type tcpPlan struct {
	traitors func(e int) map[byzantine.ID]tcpTraitor
	// down holds, per general, the epoch from which it is down (a crashed
	// process: it neither listens nor sends).
	down map[byzantine.ID]int
}

var errDown = errors.New("down (the test crashed this general)")

// freeAddrs returns n loopback addresses, free now and reserved until t
// ends (dlm/internal/ports): a general listens on its address afresh
// every epoch, and a port only found free could be taken meanwhile by
// another test's server, or by an outgoing connection in the ephemeral
// range.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		p, err := ports.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Release)
		addrs = append(addrs, p.Addr())
	}
	return addrs
}

// runTCPTeam runs n generals as agreed.Members over loopback TCP, each
// with its own key and listener, for the given epochs, and checks every
// loyal general's decision in every epoch with agreed.Check.
func runTCPTeam(t *testing.T, alg byzantine.Algorithm, n, m, epochs int, plan tcpPlan) []byzantine.ID {
	addrs := freeAddrs(t, n)
	privs := make([]ed25519.PrivateKey, n)
	var c tcp.Cluster
	for i := range n {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		privs[i] = priv
		c.Generals = append(c.Generals, tcp.Peer{ID: byzantine.ID(i), Addr: addrs[i], PublicKey: tcp.EncodeKey(pub)})
	}
	// Generous for a loaded machine: rounds end on the markers when every
	// peer is there, and the period covers a run whose every round waits
	// for its deadline (a peer down or stalling).
	round := 2 * time.Second // 1 s: every OM n=7 epoch had more than m faults under -race at load 7-15
	lead := time.Second
	period := lead + time.Duration(m+2)*round + round/2
	s := agreed.Schedule{Start: time.Now().Add(lead + round/2), Period: period, Lead: lead, Epochs: epochs}
	results := make([]map[byzantine.ID]byzantine.InteractiveGeneralResult, epochs)
	reports := make([]map[byzantine.ID]agreed.Report, epochs)
	for e := range epochs {
		results[e] = map[byzantine.ID]byzantine.InteractiveGeneralResult{}
		reports[e] = map[byzantine.ID]agreed.Report{}
	}
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(epochs+2)*period+time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		id := byzantine.ID(i)
		mb := &agreed.Member{ID: id, N: n, M: m, Candidate: true,
			Clock: func() int64 { return time.Now().UnixNano() + int64(id)*int64(time.Millisecond) }}
		run := func(ctx context.Context, start time.Time, value byzantine.Order) (byzantine.InteractiveGeneralResult, error) {
			e := int(start.Sub(s.Start) / period)
			if at, ok := plan.down[id]; ok && e >= at {
				return byzantine.InteractiveGeneralResult{}, errDown
			}
			cfg := byzantine.DefaultConfig()
			cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.RoundTimeout = alg, n, m, round
			ic := byzantine.InteractiveConfig{Config: cfg}
			if tr, ok := plan.traitors(e)[id]; ok {
				ic.Config.Faulty = []byzantine.Traitor{{ID: id, Strategy: tr.strategy}}
				if tr.propose != nil {
					honest, err := agreed.Parse(value, n)
					if err != nil {
						return byzantine.InteractiveGeneralResult{}, err
					}
					ic.Equivocate = map[byzantine.ID]func(byzantine.ID) byzantine.Order{
						id: func(to byzantine.ID) byzantine.Order { return tr.propose(to, honest).Encode() },
					}
				}
				if tr.stall {
					select {
					case <-time.After(time.Until(start.Add(3 * round / 2))):
					case <-ctx.Done():
						return byzantine.InteractiveGeneralResult{}, ctx.Err()
					}
				}
			}
			res, _, err := tcp.RunInteractiveEpoch(ctx, addrs[id], c, id, privs[id], ic, "leader", start, value)
			if err == nil {
				mu.Lock()
				results[e][id] = res
				mu.Unlock()
			}
			return res, err
		}
		wg.Go(func() {
			err := mb.Run(ctx, s, run, func(rep agreed.Report) error {
				mu.Lock()
				reports[rep.Epoch][id] = rep
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Errorf("general %d: %v", id, err)
			}
		})
	}
	wg.Wait()
	var prev *agreed.Epoch
	var leaders []byzantine.ID
	checked := 0
	for e := range epochs {
		traitors := plan.traitors(e)
		cfg := byzantine.DefaultConfig()
		cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = alg, n, m
		ep := agreed.Epoch{Epoch: e, Proposals: make([]agreed.Proposal, n), Decisions: map[byzantine.ID]agreed.Decision{}, CrashedAt: map[byzantine.ID]int{}}
		values := make([]byzantine.Order, n)
		for i := range n {
			id := byzantine.ID(i)
			ep.Proposals[i] = reports[e][id].Proposal
			values[i] = ep.Proposals[i].Encode()
			if tr, ok := traitors[id]; ok {
				cfg.Faulty = append(cfg.Faulty, byzantine.Traitor{ID: id, Strategy: tr.strategy})
				ep.Traitors = append(ep.Traitors, id)
			}
			if at, ok := plan.down[id]; ok && e >= at {
				cfg.Crashes = append(cfg.Crashes, byzantine.Crash{ID: id, Round: 0})
				ep.Down = append(ep.Down, id)
				ep.CrashedAt[id] = at
			}
		}
		ep.Run = byzantine.AssembleInteractive(byzantine.InteractiveConfig{Config: cfg, Values: values}, results[e])
		late := false
		for _, id := range ep.Run.Loyal() {
			rep := reports[e][id]
			if len(rep.OutOfTime) > 0 || rep.Error != "" || rep.Decision == nil {
				t.Logf("epoch %d: loyal general %d did not keep the schedule (rounds %v, error %q): the epoch proves nothing", e, id, rep.OutOfTime, rep.Error)
				late = true
				continue
			}
			ep.Decisions[id] = *rep.Decision
		}
		if ep.Run.TooManyFaults() {
			t.Logf("epoch %d: faulty generals %v, more than m: the epoch proves nothing", e, ep.Run.FaultyGenerals())
			late = true
		}
		if !late {
			if err := agreed.Check(ep, prev, m); err != nil {
				t.Errorf("over TCP: %v", err)
			}
			checked++
		}
		d := ep.Decisions[ep.Run.Loyal()[0]]
		if late {
			// An epoch that proves nothing names no leader to check.
			leaders = append(leaders, -1)
		} else {
			leaders = append(leaders, d.Leader)
		}
		t.Logf("epoch %d: leader %d, failed %v, clock readings %d, faulty %v", e, d.Leader, d.FailedIDs(), d.Readings, ep.Run.FaultyGenerals())
		prev = &ep
	}
	// Most epochs must keep the schedule, or the test proves nothing; a
	// loaded machine may cost one or two.
	if checked < epochs-2 {
		t.Errorf("only %d of %d epochs kept the schedule", checked, epochs)
	}
	return leaders
}

func liar(standing bool) func(byzantine.ID, agreed.Proposal) agreed.Proposal {
	return func(to byzantine.ID, honest agreed.Proposal) agreed.Proposal {
		p := honest
		p.Candidate = standing
		p.Heard = make([]bool, len(honest.Heard)) // claims it heard from nobody
		return p
	}
}

func farClock(off time.Duration, equivocate bool) func(byzantine.ID, agreed.Proposal) agreed.Proposal {
	return func(to byzantine.ID, honest agreed.Proposal) agreed.Proposal {
		p := honest
		p.Clock += int64(off)
		if equivocate {
			p.Clock += int64(to) * int64(time.Hour)
		}
		return p
	}
}

// TestUsesOverTCP is the adversary test of the uses over TCP: generals
// with their own keys and listeners run leader election, failure detection
// and clock agreement in epochs, while traitors claim loyal generals are
// dead and stand for leader, propose clocks a year off (consistently or
// not), lie in every relay, stall past a round, and the loyal leader
// crashes. Every loyal general's decision is checked in every epoch.
func TestUsesOverTCP(t *testing.T) {
	year := 365 * 24 * time.Hour
	for _, tc := range []struct {
		alg  byzantine.Algorithm
		n, m int
		// a and b are the two traitors.
		a, b       byzantine.ID
		strategies []byzantine.Strategy
	}{
		{byzantine.OM, 7, 2, 5, 6, []byzantine.Strategy{byzantine.TwoFaced, byzantine.FlipOrders, byzantine.Colluding, byzantine.Late}},
		{byzantine.SM, 4, 2, 3, 2, []byzantine.Strategy{byzantine.Forge, byzantine.FlipOrders, byzantine.Replay, byzantine.Late}},
	} {
		t.Run(fmt.Sprintf("%s/n=%d/m=%d", tc.alg, tc.n, tc.m), func(t *testing.T) {
			t.Parallel()
			st := tc.strategies
			plan := tcpPlan{
				down: map[byzantine.ID]int{0: 2}, // the leader crashes in epoch 2
				traitors: func(e int) map[byzantine.ID]tcpTraitor {
					switch e {
					case 0:
						return map[byzantine.ID]tcpTraitor{tc.a: {strategy: st[0], propose: liar(true)}, tc.b: {strategy: st[1], propose: farClock(year, false)}}
					case 1:
						return map[byzantine.ID]tcpTraitor{tc.a: {strategy: st[0], propose: liar(false)}, tc.b: {strategy: st[3], stall: true}}
					case 2:
						return map[byzantine.ID]tcpTraitor{tc.a: {strategy: st[2], propose: farClock(-year, true)}}
					case 3:
						return map[byzantine.ID]tcpTraitor{tc.a: {strategy: st[1], propose: liar(true)}}
					default:
						return map[byzantine.ID]tcpTraitor{tc.b: {strategy: byzantine.Silent, stall: true}}
					}
				},
			}
			leaders := runTCPTeam(t, tc.alg, tc.n, tc.m, 5, plan)
			if (leaders[0] != -1 && leaders[0] != 0) || (leaders[1] != -1 && leaders[1] != 0) {
				t.Errorf("leaders %v: the lowest loyal general 0 should lead epochs 0 and 1, whatever the traitors claim", leaders)
			}
			for e := 2; e < len(leaders); e++ {
				if leaders[e] == 0 {
					t.Errorf("epoch %d: the crashed general 0 still leads", e)
				}
			}
		})
	}
}
