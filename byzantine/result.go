package byzantine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// GeneralResult is what one general did in a run.
type GeneralResult struct {
	// ID is the general's id; 0 is the commander.
	ID ID `json:"id"`
	// Loyal is false for a traitor.
	Loyal bool `json:"loyal"`
	// Strategy is the traitor's strategy, empty when loyal.
	Strategy Strategy `json:"strategy,omitempty"`
	// Decision is the order the general obeys (for a loyal commander, his
	// own order). A traitor's decision means nothing; a crashed general has
	// none.
	Decision Order `json:"decision"`
	// Crashed is true when the general stopped before the end of the run
	// (Config.Crashes, or its process died): it is faulty (B11), and the
	// verdict covers the loyal survivors only.
	Crashed bool `json:"crashed,omitempty"`
	// Values is the set V of an SM lieutenant (B9).
	Values []Order `json:"values,omitempty"`
	// Stats are the general's counters.
	Stats Stats `json:"stats"`
	// Explanation says how the general decided, for the ids listed in
	// Config.Explain.
	Explanation *Explanation `json:"explanation,omitempty"`
	// Overran lists the rounds (over a real transport) whose messages this
	// general finished sending after the round's deadline: peers keeping
	// the schedule may have refused them as late, so the synchrony the
	// algorithms assume (A3) failed and no decision of the run is
	// guaranteed. See Result.OutOfTime.
	Overran []int `json:"overran,omitempty"`
	// Faults lists, over a real transport, the peers this general saw
	// fail: unreachable or never connected, gone (their connection closed
	// or broke), or late (no end-of-round marker by a round's deadline),
	// each with the first round it was seen, in increasing order of id.
	// A crash, an absence or a delay is a fault the algorithms tolerate
	// like a lie, within m faulty generals in all; see FaultyPeers.
	Faults []PeerFault `json:"faults,omitempty"`
}

// PeerFault is a failure of one peer that a general saw over a real
// transport.
type PeerFault struct {
	// ID is the peer.
	ID ID `json:"id"`
	// Kind says what the general saw.
	Kind PeerFaultKind `json:"kind"`
	// Round is the first round in which it was seen.
	Round int `json:"round"`
}

// PeerFaultKind says how a peer failed, as one general saw it.
type PeerFaultKind string

// The peer faults a general sees over a real transport.
const (
	// PeerAbsent: the general had no link to the peer when it had
	// something to send it (the peer never came up, or no handshake with
	// it succeeded yet), and still none at the round's deadline. Such a
	// peer is absent even when its own messages and markers arrive (it
	// dials out, but its address refuses the general's connections).
	PeerAbsent PeerFaultKind = "absent"
	// PeerGone: the peer's connection closed or broke during the run.
	PeerGone PeerFaultKind = "gone"
	// PeerLate: the peer had not announced the end of a round by the
	// round's deadline (it is slow, silent, or withholds its markers).
	PeerLate PeerFaultKind = "late"
	// PeerUnreachable: the link to the peer had been up, then broke, and
	// messages of a round whose deadline passed were still not
	// acknowledged by it: it refused or reset the redials, or withheld its
	// acknowledgements. A transient reset costs nothing (the link is
	// dialled again and the peer says where its stream resumes), so what
	// stays undelivered is the peer's failure, not this general's
	// lateness.
	PeerUnreachable PeerFaultKind = "unreachable"
	// PeerRefused: the peer sent a message no loyal general sends, refused
	// as malformed, oversized, misaddressed, spoofed or forged (a
	// signature of its chain does not verify: a loyal general signs its
	// own link and relays only chains it verified).
	PeerRefused PeerFaultKind = "refused"
)

// FaultyPeers returns the ids of the peers listed in Faults, in
// increasing order. When they are more than m, the algorithms guarantee
// nothing, whatever the traitors: see Result.TooManyFaults.
func (g GeneralResult) FaultyPeers() []ID {
	var ids []ID
	for _, f := range g.Faults {
		if !slices.Contains(ids, f.ID) {
			ids = append(ids, f.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// TraceEvent records one delivery (or non-delivery) of a message.
type TraceEvent struct {
	// Round is the round of delivery.
	Round int `json:"round"`
	// Message is the message as delivered.
	Message Message `json:"message"`
	// Fault is the transport fault applied, Deliver when none.
	Fault Fault `json:"fault"`
	// Rejected is the receiver's reason to refuse it, empty when believed.
	Rejected RejectReason `json:"rejected,omitempty"`
}

// String formats the event as one line of a trace.
func (e TraceEvent) String() string {
	if e.Fault == Missing {
		return fmt.Sprintf("round %d: %d -> %d  %s  [missing: RETREAT by default]", e.Round, e.Message.From, e.Message.To, pathString(e.Message.Path))
	}
	s := fmt.Sprintf("round %d: %d -> %d  %s", e.Round, e.Message.From, e.Message.To, e.Message.Chain())
	if e.Message.Round != e.Round {
		s += fmt.Sprintf(" (sent in round %d)", e.Message.Round)
	}
	if e.Fault != Deliver {
		s += "  [" + e.Fault.String() + "]"
	}
	if e.Rejected != "" {
		s += "  rejected: " + string(e.Rejected)
	}
	return s
}

// Result is the outcome of a run.
type Result struct {
	// Config is the run's configuration.
	Config Config `json:"config"`
	// Generals holds one entry per general, indexed by id.
	Generals []GeneralResult `json:"generals"`
	// Messages is the number of messages sent by all generals.
	Messages int `json:"messages"`
	// Rounds is the number of message rounds, m+1 (B6, B9).
	Rounds int `json:"rounds"`
	// Bytes is the wire size of all messages sent.
	Bytes int64 `json:"bytes"`
	// SignaturesMade and SignaturesVerified count ed25519 operations.
	SignaturesMade     int `json:"signatures_made"`
	SignaturesVerified int `json:"signatures_verified"`
	// Rejected counts refused messages by reason, over all generals.
	Rejected map[RejectReason]int `json:"rejected,omitempty"`
	// Faults counts the faults the transport injected.
	Faults map[string]int `json:"faults,omitempty"`
	// Trace holds every delivery when Config.Trace is set.
	Trace []TraceEvent `json:"trace,omitempty"`
}

// finish fills the totals from the per-general results.
func (r *Result) finish() {
	var total Stats
	for _, g := range r.Generals {
		total.add(g.Stats)
	}
	r.Messages = total.Sent
	r.Bytes = total.Bytes
	r.SignaturesMade = total.SignaturesMade
	r.SignaturesVerified = total.SignaturesVerified
	r.Rejected = total.Rejected
	r.Rounds = r.Config.MaxTraitors + 1
}

// Loyal returns the ids of the loyal generals, in increasing order.
func (r *Result) Loyal() []ID {
	var ids []ID
	for _, g := range r.Generals {
		if g.Loyal {
			ids = append(ids, g.ID)
		}
	}
	return ids
}

// Faulty returns the ids of the traitors, in increasing order.
func (r *Result) Faulty() []ID {
	var ids []ID
	for _, g := range r.Generals {
		if !g.Loyal {
			ids = append(ids, g.ID)
		}
	}
	return ids
}

// Crashed returns the ids of the generals that crashed, in increasing
// order.
func (r *Result) Crashed() []ID {
	var ids []ID
	for _, g := range r.Generals {
		if g.Crashed {
			ids = append(ids, g.ID)
		}
	}
	return ids
}

// FaultyGenerals returns, in increasing order, every general the run
// counts as faulty: the traitors, the generals that crashed, and the peers
// a loyal survivor saw fail (GeneralResult.Faults). When they are more
// than m, the algorithms guarantee nothing (see TooManyFaults).
func (r *Result) FaultyGenerals() []ID {
	var ids []ID
	add := func(id ID) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, g := range r.Generals {
		if !g.Loyal || g.Crashed {
			add(g.ID)
		}
	}
	for _, g := range r.Generals {
		if g.Loyal && !g.Crashed {
			for _, id := range g.FaultyPeers() {
				add(id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// TooManyFaults reports whether more than m generals were faulty (see
// FaultyGenerals): the run is then outside what IC1 and IC2 are
// guaranteed for, agreeing or not.
func (r *Result) TooManyFaults() bool {
	return len(r.FaultyGenerals()) > r.Config.MaxTraitors
}

// OutOfTime returns the loyal generals that did not keep the run's
// schedule (GeneralResult.Overran): when it is not empty the run ran out of
// time, and its decisions, agreeing or not, prove nothing.
func (r *Result) OutOfTime() []ID {
	var ids []ID
	for _, g := range r.Generals {
		if g.Loyal && !g.Crashed && len(g.Overran) > 0 {
			ids = append(ids, g.ID)
		}
	}
	return ids
}

// Decisions returns the decisions of the loyal lieutenants that did not
// crash (not the commander), by id.
func (r *Result) Decisions() map[ID]Order {
	d := make(map[ID]Order)
	for _, g := range r.Generals {
		if g.Loyal && !g.Crashed && g.ID != 0 {
			d[g.ID] = g.Decision
		}
	}
	return d
}

// Sentinel errors of Verify.
var (
	// ErrIC1 means loyal lieutenants obey different orders (B1 IC1).
	ErrIC1 = errors.New("byzantine: IC1 violated: loyal lieutenants disagree")
	// ErrIC2 means the commander is loyal and a loyal lieutenant does not
	// obey his order (B1 IC2).
	ErrIC2 = errors.New("byzantine: IC2 violated: a loyal lieutenant disobeys the loyal commander")
)

// VerifyError details a violation of IC1 or IC2. errors.Is finds ErrIC1 and
// ErrIC2 in it.
type VerifyError struct {
	// IC1 and IC2 are true when the condition holds.
	IC1, IC2 bool
	// Decisions are the loyal lieutenants' decisions.
	Decisions map[ID]Order
	// Disagree names the loyal lieutenants whose decision differs from the
	// commander's order (IC2) or from the most common decision (IC1).
	Disagree []ID
	// Order is the loyal commander's order, empty when he is a traitor.
	Order Order
}

// Error describes the violation.
func (e *VerifyError) Error() string {
	var parts []string
	if !e.IC1 {
		parts = append(parts, ErrIC1.Error())
	}
	if !e.IC2 {
		parts = append(parts, fmt.Sprintf("%v (commander ordered %s)", ErrIC2, e.Order))
	}
	var ds []string
	for _, id := range mapsKeys(e.Decisions) {
		ds = append(ds, fmt.Sprintf("%d=%s", id, e.Decisions[id]))
	}
	return fmt.Sprintf("%s; disagreeing generals %v; decisions %s", strings.Join(parts, "; "), e.Disagree, strings.Join(ds, " "))
}

// Unwrap returns the sentinels of the violated conditions.
func (e *VerifyError) Unwrap() []error {
	var errs []error
	if !e.IC1 {
		errs = append(errs, ErrIC1)
	}
	if !e.IC2 {
		errs = append(errs, ErrIC2)
	}
	return errs
}

func mapsKeys(m map[ID]Order) []ID {
	ks := make([]ID, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// IC1 reports whether all loyal lieutenants obey the same order (B1).
func (r *Result) IC1() bool {
	var first Order
	for _, d := range r.Decisions() {
		if first == "" {
			first = d
		} else if d != first {
			return false
		}
	}
	return true
}

// CommanderLoyal reports whether the commander is loyal and did not crash.
func (r *Result) CommanderLoyal() bool {
	return len(r.Generals) > 0 && r.Generals[0].Loyal && !r.Generals[0].Crashed
}

// IC2 reports whether, if the commander is loyal, every loyal lieutenant
// obeys his order (B1). It holds vacuously with a traitorous or crashed
// commander.
func (r *Result) IC2() bool {
	if !r.CommanderLoyal() {
		return true
	}
	for _, d := range r.Decisions() {
		if d != r.Config.Order {
			return false
		}
	}
	return true
}

// Verify checks IC1 and IC2 (B1) and returns nil when both hold, or a
// *VerifyError naming the generals that disagree.
func (r *Result) Verify() error {
	ic1, ic2 := r.IC1(), r.IC2()
	if ic1 && ic2 {
		return nil
	}
	e := &VerifyError{IC1: ic1, IC2: ic2, Decisions: r.Decisions()}
	ref := Order("")
	if r.CommanderLoyal() {
		e.Order = r.Config.Order
		ref = r.Config.Order
	} else {
		counts := map[Order]int{}
		for _, d := range e.Decisions {
			counts[d]++
		}
		for o, c := range counts {
			if c > counts[ref] || (c == counts[ref] && o < ref) {
				ref = o
			}
		}
	}
	for _, id := range mapsKeys(e.Decisions) {
		if e.Decisions[id] != ref {
			e.Disagree = append(e.Disagree, id)
		}
	}
	return e
}

// sortTrace orders events by round, then sender, receiver and path, so a
// trace assembled from several processes reads like the in-memory one.
func sortTrace(ev []TraceEvent) {
	slices.SortStableFunc(ev, func(a, b TraceEvent) int {
		if a.Round != b.Round {
			return a.Round - b.Round
		}
		if a.Message.From != b.Message.From {
			return int(a.Message.From - b.Message.From)
		}
		if a.Message.To != b.Message.To {
			return int(a.Message.To - b.Message.To)
		}
		return slices.Compare(a.Message.Path, b.Message.Path)
	})
}
