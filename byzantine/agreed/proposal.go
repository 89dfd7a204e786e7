package agreed

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dlm/byzantine"
)

// MaxGenerals is the largest team Proposal can encode: a proposal must fit
// in one order (byzantine.MaxOrderLen bytes).
const MaxGenerals = 128

// ErrProposal is wrapped by Parse errors.
var ErrProposal = errors.New("agreed: malformed proposal")

// Proposal is what one general proposes in an epoch: its private value of
// the epoch's interactive-consistency run.
type Proposal struct {
	// Candidate is true when the general stands for leader.
	Candidate bool `json:"candidate"`
	// Clock is the general's clock reading, in Unix nanoseconds, when
	// HasClock is set.
	Clock    int64 `json:"clock,omitempty"`
	HasClock bool  `json:"has_clock,omitempty"`
	// Heard, when not nil, holds one entry per general: whether this
	// general heard from it in the previous epoch (its own entry is
	// ignored). Nil means no report.
	Heard []bool `json:"heard,omitempty"`
}

// Encode returns p as an order, in the canonical form Parse accepts:
// "p1.<c or ->.<clock or ->.<heard or ->", heard in hexadecimal, one digit
// per four generals (general i is bit i%4 of digit i/4).
func (p Proposal) Encode() byzantine.Order {
	var b strings.Builder
	b.WriteString("p1.")
	if p.Candidate {
		b.WriteString("c.")
	} else {
		b.WriteString("-.")
	}
	if p.HasClock {
		b.WriteString(strconv.FormatInt(p.Clock, 10))
	} else {
		b.WriteByte('-')
	}
	b.WriteByte('.')
	if p.Heard == nil {
		b.WriteByte('-')
	} else {
		for k := 0; k < (len(p.Heard)+3)/4; k++ {
			d := 0
			for j := range 4 {
				if i := 4*k + j; i < len(p.Heard) && p.Heard[i] {
					d |= 1 << j
				}
			}
			b.WriteByte("0123456789abcdef"[d])
		}
	}
	return byzantine.Order(b.String())
}

// Parse decodes an entry of an agreed vector of n generals. It accepts
// only the canonical form Encode writes, with a heard report of exactly n
// generals; anything else (the default order a missing value leaves, a
// traitor's garbage) is an error wrapping ErrProposal.
func Parse(o byzantine.Order, n int) (Proposal, error) {
	bad := func(why string) (Proposal, error) {
		return Proposal{}, fmt.Errorf("%w: %q: %s", ErrProposal, o, why)
	}
	parts := strings.Split(string(o), ".")
	if len(parts) != 4 || parts[0] != "p1" {
		return bad("want p1.<c|->.<clock|->.<heard|->")
	}
	var p Proposal
	switch parts[1] {
	case "c":
		p.Candidate = true
	case "-":
	default:
		return bad("candidacy is neither c nor -")
	}
	if parts[2] != "-" {
		c, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil {
			return bad("clock reading is not an integer")
		}
		p.Clock, p.HasClock = c, true
	}
	if parts[3] != "-" {
		if len(parts[3]) != (n+3)/4 {
			return bad(fmt.Sprintf("heard report covers %d digits, want %d for %d generals", len(parts[3]), (n+3)/4, n))
		}
		p.Heard = make([]bool, n)
		for k, c := range parts[3] {
			d := strings.IndexRune("0123456789abcdef", c)
			if d < 0 {
				return bad("heard report is not lowercase hexadecimal")
			}
			for j := range 4 {
				if d&(1<<j) == 0 {
					continue
				}
				if 4*k+j >= n {
					return bad("heard report names a general beyond n")
				}
				p.Heard[4*k+j] = true
			}
		}
	}
	if p.Encode() != o {
		return bad("not in canonical form")
	}
	return p, nil
}

// Fault is one general every loyal general counts as faulty, and why.
type Fault struct {
	// ID is the general.
	ID byzantine.ID `json:"id"`
	// Reason says why, in words.
	Reason string `json:"reason"`
	// Reporters are the generals whose agreed reports said it was silent
	// (empty when its own entry convicted it).
	Reporters []byzantine.ID `json:"reporters,omitempty"`
}

// Decision is what every loyal general concludes from one agreed vector.
type Decision struct {
	// Vector is the agreed vector: the one picture.
	Vector []byzantine.Order `json:"vector"`
	// Failed lists the generals declared failed, by id.
	Failed []Fault `json:"failed"`
	// Leader is the elected general, -1 when none stood or all who stood
	// were declared failed.
	Leader byzantine.ID `json:"leader"`
	// Clock is the agreed clock reading (Unix nanoseconds), when HasClock
	// is set: the lower median of the well-formed readings.
	Clock    int64 `json:"clock,omitempty"`
	HasClock bool  `json:"has_clock"`
	// Readings is how many well-formed readings the median was taken over.
	Readings int `json:"readings,omitempty"`
}

// FailedIDs returns the ids of the generals declared failed.
func (d Decision) FailedIDs() []byzantine.ID {
	ids := make([]byzantine.ID, 0, len(d.Failed))
	for _, f := range d.Failed {
		ids = append(ids, f.ID)
	}
	return ids
}

// Decide computes every use from an agreed vector, for a run that
// tolerates m faulty generals. It is a pure function: loyal generals with
// the same vector reach the same Decision.
func Decide(vector []byzantine.Order, m int) Decision {
	n := len(vector)
	d := Decision{Vector: slices.Clone(vector), Leader: -1}
	props := make([]*Proposal, n)
	for i, o := range vector {
		if p, err := Parse(o, n); err == nil {
			props[i] = &p
		}
	}
	failed := make([]bool, n)
	for p := range n {
		if props[p] == nil {
			failed[p] = true
			d.Failed = append(d.Failed, Fault{ID: byzantine.ID(p),
				Reason: fmt.Sprintf("its agreed value %q is missing or malformed (a loyal general's own proposal is always agreed)", vector[p])})
			continue
		}
		var silent []byzantine.ID
		for r := range n {
			if r != p && props[r] != nil && props[r].Heard != nil && !props[r].Heard[p] {
				silent = append(silent, byzantine.ID(r))
			}
		}
		if len(silent) >= m+1 {
			failed[p] = true
			d.Failed = append(d.Failed, Fault{ID: byzantine.ID(p), Reporters: silent,
				Reason: fmt.Sprintf("%d generals %v reported it silent in the previous epoch (at least m+1 = %d, so at least one loyal)", len(silent), silent, m+1)})
		}
	}
	for p := range n {
		if props[p] != nil && props[p].Candidate && !failed[p] {
			d.Leader = byzantine.ID(p)
			break
		}
	}
	var clocks []int64
	for p := range n {
		if props[p] != nil && props[p].HasClock {
			clocks = append(clocks, props[p].Clock)
		}
	}
	if len(clocks) > 0 {
		slices.Sort(clocks)
		d.Clock, d.HasClock, d.Readings = clocks[(len(clocks)-1)/2], true, len(clocks)
	}
	return d
}
