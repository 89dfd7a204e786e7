package agreed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"dlm/byzantine"
)

// RunEpoch runs one general's part of one epoch's interactive-consistency
// run, which starts at start, with value as the general's private value
// (package tcp: InteractiveEpoch).
type RunEpoch func(ctx context.Context, start time.Time, value byzantine.Order) (byzantine.InteractiveGeneralResult, error)

// Member is one general of a team that runs the uses in epochs over a real
// transport, one process per general: each epoch it proposes, takes part
// in the epoch's run and decides from the vector it got. A Member is not
// safe for concurrent use.
type Member struct {
	// ID is the general; N and M the team's size and tolerated faults.
	ID   byzantine.ID
	N, M int
	// Candidate is true when the general stands for leader.
	Candidate bool
	// Clock, when set, is read once per epoch, at the epoch's wake-up, for
	// the general's clock reading (Unix nanoseconds).
	Clock func() int64
	// heard is what the general heard in its last epoch; nil before the
	// first (then it reports hearing from all) and after an epoch it
	// could not run or ran out of time in (then it reports nothing).
	heard   []bool
	started bool
}

// Report is one epoch of a Member, as printed one JSON line per epoch.
type Report struct {
	// Epoch is the epoch's number; Start when its round 0 began.
	Epoch int       `json:"epoch"`
	Start time.Time `json:"start"`
	// General is the reporting general.
	General byzantine.ID `json:"general"`
	// Proposal is what it proposed, when Proposed is set: an epoch the
	// general skipped had no proposal from it.
	Proposal Proposal `json:"proposal"`
	// Proposed is set when the general made Proposal and ran the epoch.
	Proposed bool `json:"proposed"`
	// Decision is what it decided from its vector (nil when it could not
	// run the epoch).
	Decision *Decision `json:"decision,omitempty"`
	// Heard lists the generals whose own value reached it directly in
	// time this epoch: its report for the next.
	Heard []byzantine.ID `json:"heard"`
	// Seen lists the peers this general saw fail over the transport this
	// epoch (absent, gone, or late with a round's end), the first failure
	// of each.
	Seen []byzantine.PeerFault `json:"seen_faulty,omitempty"`
	// TooManyFaults is set when this general saw more than m peers fail:
	// the epoch is then outside what agreement is guaranteed for, and its
	// decision proves nothing.
	TooManyFaults bool `json:"too_many_faults,omitempty"`
	// OutOfTime lists the rounds in which it did not keep the schedule:
	// its vector, and so its decision, then prove nothing.
	OutOfTime []int `json:"out_of_time,omitempty"`
	// Error says why the epoch could not run, empty when it ran.
	Error string `json:"error,omitempty"`
}

// Propose returns the general's proposal for the next epoch.
func (mb *Member) Propose() Proposal {
	p := Proposal{Candidate: mb.Candidate}
	switch {
	case !mb.started:
		p.Heard = slices.Repeat([]bool{true}, mb.N)
	case mb.heard != nil:
		p.Heard = slices.Clone(mb.heard)
	}
	if mb.Clock != nil {
		p.Clock, p.HasClock = mb.Clock(), true
	}
	return p
}

// Observe takes the general's result of an epoch (err from its run) and
// returns its decision; the heard report for the next epoch comes from it,
// unless the general ran out of time in it, or saw more than m peers fail
// (then it reports nothing).
func (mb *Member) Observe(res byzantine.InteractiveGeneralResult, err error) (*Decision, error) {
	mb.started = true
	if err != nil {
		mb.heard = nil
		return nil, err
	}
	mb.heard = slices.Clone(res.Heard)
	if len(res.Overran()) > 0 {
		// It did not keep the schedule: what it refused as late may have
		// come in time, so its silence says nothing about its peers.
		mb.heard = nil
	}
	if len(res.Faults()) > mb.M {
		// More than m peers failed as it saw them: the epoch proves
		// nothing, and a general cut off from the others (its inbound
		// links refused, say) is the likeliest cause, so its silence
		// report may convict loyal peers. A loyal general never makes
		// one of the m+1 reports that declare a peer failed from an
		// epoch it could not decide.
		mb.heard = nil
	}
	if len(res.Vector) != mb.N {
		return nil, fmt.Errorf("agreed: general %d: vector of %d entries, want %d", mb.ID, len(res.Vector), mb.N)
	}
	d := Decide(res.Vector, mb.M)
	return &d, nil
}

// Schedule says when epochs start: epoch k at Start + k*Period, and a
// general wakes Lead before each to propose and connect.
type Schedule struct {
	Start  time.Time
	Period time.Duration
	Lead   time.Duration
	// Epochs is how many epochs to run; 0 means until ctx ends.
	Epochs int
}

// ErrSchedule is wrapped when a Schedule cannot be kept.
var ErrSchedule = errors.New("agreed: bad schedule")

// Run runs the member on schedule s: for every epoch it waits for the
// wake-up, proposes, runs the epoch with run, decides, and calls each with
// the report. An epoch whose start has passed by more than Lead when the
// member gets to it is skipped with a report saying so. A member that
// begins after the schedule's start (a general restarted after a crash,
// given its team's schedule) joins at the first epoch it can still run,
// JoinsAt(s, now), with the team's numbering; the epochs before it are
// not reported. Run returns when s.Epochs epochs are done, when each
// returns an error, or when ctx ends (with ctx.Err()).
func (mb *Member) Run(ctx context.Context, s Schedule, run RunEpoch, each func(Report) error) error {
	if s.Period <= 0 || s.Lead <= 0 || s.Lead >= s.Period {
		return fmt.Errorf("%w: period %v and lead %v: want 0 < lead < period", ErrSchedule, s.Period, s.Lead)
	}
	for k := JoinsAt(s, time.Now()); s.Epochs == 0 || k < s.Epochs; k++ {
		start := s.Start.Add(time.Duration(k) * s.Period)
		if err := sleepUntil(ctx, start.Add(-s.Lead)); err != nil {
			return err
		}
		rep := Report{Epoch: k, Start: start, General: mb.ID, Heard: []byzantine.ID{}}
		if late := time.Since(start); late > s.Lead {
			// A general this far behind would enter round 0 after its
			// peers closed it; it sits the epoch out.
			mb.started, mb.heard = true, nil
			rep.Error = fmt.Sprintf("woke %v after the epoch's start: skipped", late.Round(time.Millisecond))
			if err := each(rep); err != nil {
				return err
			}
			continue
		}
		rep.Proposal, rep.Proposed = mb.Propose(), true
		res, err := run(ctx, start, rep.Proposal.Encode())
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d, err := mb.Observe(res, err)
		if err != nil {
			rep.Error = err.Error()
		}
		rep.Decision = d
		for i, h := range res.Heard {
			if h {
				rep.Heard = append(rep.Heard, byzantine.ID(i))
			}
		}
		rep.OutOfTime = res.Overran()
		rep.Seen = res.Faults()
		rep.TooManyFaults = len(rep.Seen) > mb.M
		if err := each(rep); err != nil {
			return err
		}
	}
	return nil
}

// JoinsAt returns the first epoch of s a member that begins at now can
// run: 0 until epoch 0's start is more than s.Lead past, then the first
// epoch whose start is not (Run skips a later one, as it does an epoch it
// wakes up too late for). s.Epochs is not looked at: the result may be
// past the last epoch.
func JoinsAt(s Schedule, now time.Time) int {
	late := now.Sub(s.Start) - s.Lead
	if late <= 0 || s.Period <= 0 {
		return 0
	}
	return int((late + s.Period - 1) / s.Period)
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
