package agreed

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"dlm/byzantine"
)

// ErrViolated is wrapped by every property Check finds broken.
var ErrViolated = errors.New("agreed: property violated")

// Trusted returns the generals that were loyal and up in epoch ep and in
// the epoch before it (prev, nil for the first): their reports and
// proposals must count, and none of them may be declared failed.
func Trusted(ep Epoch, prev *Epoch) []byzantine.ID {
	var ids []byzantine.ID
	for i := range ep.Proposals {
		id := byzantine.ID(i)
		if slices.Contains(ep.Traitors, id) || slices.Contains(ep.Down, id) {
			continue
		}
		if prev != nil && (slices.Contains(prev.Traitors, id) || slices.Contains(prev.Down, id)) {
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

// ClockBounds returns the range of the trusted generals' clock readings
// in ep, and whether any has one.
func ClockBounds(ep Epoch, trusted []byzantine.ID) (lo, hi int64, ok bool) {
	for _, id := range trusted {
		p := ep.Proposals[id]
		if !p.HasClock {
			continue
		}
		if !ok || p.Clock < lo {
			lo = p.Clock
		}
		if !ok || p.Clock > hi {
			hi = p.Clock
		}
		ok = true
	}
	return lo, hi, ok
}

// ClockGuaranteed reports whether the agreed clock of d must lie within
// the trusted generals' range: fewer than half of the well-formed readings
// come from generals outside trusted.
func ClockGuaranteed(d Decision, trusted []byzantine.ID) bool {
	n := len(d.Vector)
	f := 0
	for i, o := range d.Vector {
		if slices.Contains(trusted, byzantine.ID(i)) {
			continue
		}
		if p, err := Parse(o, n); err == nil && p.HasClock {
			f++
		}
	}
	return 2*f < d.Readings
}

// Check states the properties of the uses for one epoch of a Team (prev
// is the epoch before, nil for the first), for a run tolerating m faults:
//
//   - the vectors satisfy IC1 and IC2;
//   - every loyal general that is up reaches the same Decision;
//   - no trusted general (see Trusted) is declared failed;
//   - every general down since round 0 of this epoch (so every general
//     that crashed in an earlier epoch) is declared failed;
//   - the leader, if any, stood for leader in its agreed entry and is not
//     down since round 0; no trusted candidate has a lower id than a
//     faulty leader, and when a trusted general stands there is a leader
//     no higher than the lowest of them;
//   - when ClockGuaranteed, the agreed clock lies within the trusted
//     generals' readings.
//
// It returns nil, or an error wrapping ErrViolated that says what broke.
func Check(ep Epoch, prev *Epoch, m int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: epoch %d: "+format, append([]any{ErrViolated, ep.Epoch}, args...)...)
	}
	if err := ep.Run.Verify(); err != nil {
		return bad("%v", err)
	}
	ids := make([]byzantine.ID, 0, len(ep.Decisions))
	for id := range ep.Decisions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return nil
	}
	d := ep.Decisions[ids[0]]
	for _, id := range ids[1:] {
		if !reflect.DeepEqual(ep.Decisions[id], d) {
			return bad("general %d decided %+v, general %d %+v", ids[0], d, id, ep.Decisions[id])
		}
	}
	trusted := Trusted(ep, prev)
	failed := d.FailedIDs()
	for _, id := range trusted {
		if slices.Contains(failed, id) {
			return bad("loyal general %d, up, declared failed: %v", id, d.Failed)
		}
	}
	cfg := ep.Run.Config.Config
	for _, id := range ep.Down {
		if cfg.CrashRound(id) == 0 && !slices.Contains(failed, id) {
			return bad("general %d, down since epoch %d, not declared failed: %v", id, ep.CrashedAt[id], d.Failed)
		}
	}
	lowest := byzantine.ID(-1)
	for _, id := range trusted {
		if ep.Proposals[id].Candidate {
			lowest = id
			break
		}
	}
	if d.Leader >= 0 {
		p, err := Parse(d.Vector[d.Leader], len(d.Vector))
		if err != nil || !p.Candidate {
			return bad("leader %d did not stand (entry %q)", d.Leader, d.Vector[d.Leader])
		}
		if cfg.CrashRound(d.Leader) == 0 {
			return bad("leader %d is down", d.Leader)
		}
	}
	if lowest >= 0 && (d.Leader < 0 || d.Leader > lowest) {
		return bad("leader %d, but loyal general %d stood and is up", d.Leader, lowest)
	}
	if d.HasClock && ClockGuaranteed(d, trusted) {
		if lo, hi, ok := ClockBounds(ep, trusted); ok && (d.Clock < lo || d.Clock > hi) {
			return bad("agreed clock %d outside the loyal readings [%d, %d]", d.Clock, lo, hi)
		}
	}
	return nil
}
