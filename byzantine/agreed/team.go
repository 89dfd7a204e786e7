package agreed

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"dlm/byzantine"
)

// Adversary is what the faulty generals do in one epoch of a Team.
type Adversary struct {
	// Traitors lie in the epoch's interactive-consistency run, each with
	// its strategy (in every instance).
	Traitors []byzantine.Traitor
	// Crashes make generals crash in this epoch, at the start of the given
	// round; a crashed general stays down in every later epoch.
	Crashes []byzantine.Crash
	// Propose, when set for a traitor, gives the proposal it sends to each
	// general (by id) as the commander of its own instance; honest is
	// what it would propose if it were loyal. Without it a traitor sends
	// its honest proposal through its strategy.
	Propose map[byzantine.ID]func(to byzantine.ID, honest Proposal) Proposal
}

// Team simulates n generals that run the uses in epochs over the
// in-memory transport.
type Team struct {
	// Config is the run of every epoch: Algorithm, Generals, MaxTraitors,
	// Seed (each epoch adds its number), Majority. Faulty and Crashes are
	// taken from Adversary instead.
	Config byzantine.Config
	// Candidates lists the generals that stand for leader.
	Candidates []byzantine.ID
	// Clock, when set, is general id's clock reading in epoch e (Unix
	// nanoseconds).
	Clock func(epoch int, id byzantine.ID) int64
	// Adversary, when set, says what the faulty generals do in epoch e.
	Adversary func(epoch int) Adversary
}

// Epoch is the outcome of one epoch of a Team.
type Epoch struct {
	// Epoch is the epoch's number, from 0.
	Epoch int `json:"epoch"`
	// Proposals holds each general's honest proposal (what a loyal general
	// in its place would propose), by id.
	Proposals []Proposal `json:"proposals"`
	// Run is the epoch's interactive-consistency run.
	Run *byzantine.InteractiveResult `json:"-"`
	// Decisions holds, for each loyal general that is up, the Decision it
	// draws from its own vector.
	Decisions map[byzantine.ID]Decision `json:"decisions"`
	// Down lists the generals that crashed in this epoch or before.
	Down []byzantine.ID `json:"down,omitempty"`
	// CrashedAt holds the epoch in which each down general crashed.
	CrashedAt map[byzantine.ID]int `json:"crashed_at,omitempty"`
	// Traitors lists the generals that lied in this epoch.
	Traitors []byzantine.ID `json:"traitors,omitempty"`
}

// ErrTeam is wrapped by errors about a Team's configuration.
var ErrTeam = errors.New("agreed: invalid team")

// Validate checks the team.
func (t Team) Validate() error {
	n := t.Config.Generals
	if n > MaxGenerals {
		return fmt.Errorf("%w: %d generals: a proposal encodes at most %d", ErrTeam, n, MaxGenerals)
	}
	for _, c := range t.Candidates {
		if c < 0 || int(c) >= n {
			return fmt.Errorf("%w: candidate %d out of range 0..%d", ErrTeam, c, n-1)
		}
	}
	return nil
}

// Run runs epochs epochs and calls each with every epoch's outcome, in
// order; it stops at the first error each returns. The generals' heard
// reports carry over from one epoch to the next: in epoch 0 every general
// reports hearing from all.
func (t Team) Run(ctx context.Context, epochs int, each func(Epoch) error) error {
	if err := t.Validate(); err != nil {
		return err
	}
	n := t.Config.Generals
	heard := make([][]bool, n)
	for i := range heard {
		heard[i] = make([]bool, n)
		for j := range heard[i] {
			heard[i][j] = true
		}
	}
	crashedAt := map[byzantine.ID]int{}
	for e := range epochs {
		var adv Adversary
		if t.Adversary != nil {
			adv = t.Adversary(e)
		}
		ep := Epoch{Epoch: e, Proposals: make([]Proposal, n), CrashedAt: map[byzantine.ID]int{}}
		values := make([]byzantine.Order, n)
		for i := range n {
			id := byzantine.ID(i)
			p := Proposal{Candidate: slices.Contains(t.Candidates, id), Heard: slices.Clone(heard[i])}
			if t.Clock != nil {
				p.Clock, p.HasClock = t.Clock(e, id), true
			}
			ep.Proposals[i] = p
			values[i] = p.Encode()
		}
		cfg := t.Config
		cfg.Seed += int64(e)
		cfg.Seq = uint64(e) + 1
		cfg.Faulty = slices.Clone(adv.Traitors)
		cfg.Crashes = nil
		for id, at := range crashedAt {
			cfg.Crashes = append(cfg.Crashes, byzantine.Crash{ID: id, Round: 0})
			ep.CrashedAt[id] = at
		}
		for _, c := range adv.Crashes {
			if _, down := crashedAt[c.ID]; !down {
				cfg.Crashes = append(cfg.Crashes, c)
				crashedAt[c.ID] = e
				ep.CrashedAt[c.ID] = e
			}
		}
		slices.SortFunc(cfg.Crashes, func(a, b byzantine.Crash) int { return int(a.ID - b.ID) })
		for id := range ep.CrashedAt {
			ep.Down = append(ep.Down, id)
		}
		slices.Sort(ep.Down)
		for _, tr := range adv.Traitors {
			ep.Traitors = append(ep.Traitors, tr.ID)
		}
		slices.Sort(ep.Traitors)
		for id := range adv.Propose {
			if !slices.Contains(ep.Traitors, id) {
				return fmt.Errorf("%w: epoch %d: Adversary.Propose lies for general %d, which is not among the epoch's traitors", ErrTeam, e, id)
			}
		}
		ic := byzantine.InteractiveConfig{Config: cfg, Values: values}
		if len(adv.Propose) > 0 {
			ic.Equivocate = map[byzantine.ID]func(byzantine.ID) byzantine.Order{}
			for id, f := range adv.Propose {
				honest := ep.Proposals[id]
				ic.Equivocate[id] = func(to byzantine.ID) byzantine.Order { return f(to, honest).Encode() }
			}
		}
		res, err := byzantine.RunInteractive(ctx, ic)
		if err != nil {
			return fmt.Errorf("agreed: epoch %d: %w", e, err)
		}
		ep.Run = res
		ep.Decisions = make(map[byzantine.ID]Decision)
		for id, vec := range res.Vectors {
			ep.Decisions[id] = Decide(vec, cfg.MaxTraitors)
		}
		for i := range n {
			if res.Heard[i] != nil {
				heard[i] = res.Heard[i]
			}
		}
		if err := each(ep); err != nil {
			return err
		}
	}
	return nil
}
