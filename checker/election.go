package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// ElectionPrefix starts the resource of every election's lock (package
// election): CheckElection looks only at those resources.
const ElectionPrefix = "election:"

// Failover is the time from the end of one leadership of an election to
// the election of the next leader.
type Failover struct {
	// Resource is the election's lock resource.
	Resource string
	// From is when the previous leader stopped believing it led, To when
	// the next leader was elected (nanoseconds since the start of the run).
	From, To int64
}

// Duration is the failover's length.
func (f Failover) Duration() time.Duration { return time.Duration(f.To - f.From) }

// Failovers returns every failover of h's elections, in order of time.
func Failovers(h *History) []Failover {
	var out []Failover
	for r, hs := range h.holds() {
		if !strings.HasPrefix(r, ElectionPrefix) {
			continue
		}
		for i := 1; i < len(hs); i++ {
			if hs[i-1].possible || hs[i].possible {
				continue
			}
			out = append(out, Failover{Resource: r, From: min(hs[i-1].to, hs[i].from), To: hs[i].from})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out
}

// CheckElection checks leader election (package election) over h. A
// campaign is recorded as an acquisition (Kind Acquire) of the election's
// resource (ElectionPrefix + name), OK when the candidate was elected, with
// its term as Token and its validity end as Until; the leadership is
// believed from the campaign's return until the earliest of its validity
// end (moved by successful Extend ops, the auto-extensions, R17) and the
// start of its Release op (the resignation, or the moment the leader
// noticed its loss). The properties:
//
//   - never two leaders believed at once: the believed intervals of an
//     election do not overlap (R1.1);
//   - terms strictly increase with the time of election, and are never 0
//     (R18: the term is the fencing token);
//   - after a leadership ends, the next leader is elected within bound,
//     except where a fault (other than latency) was active or had healed
//     less than grace before (a leader cut off keeps its keys up to a ttl).
//
// A campaign whose outcome is unknown that may overlap makes the verdict
// Unknown, unless a definite violation exists.
func CheckElection(h *History, bound, grace time.Duration) Result {
	res := Result{Check: "election"}
	if why := h.outOfRange(); why != "" {
		res.Verdict, res.Counterexample = Unknown, "values out of range: "+why
		return res
	}
	ids := opIDs(h)
	violate := func(ops []int, format string, args ...any) {
		res.Violations++
		if res.Counterexample == "" {
			res.Counterexample, res.Ops = fmt.Sprintf(format, args...), ops
		}
	}
	holds := h.holds()
	resources := make([]string, 0, len(holds))
	for r := range holds {
		if strings.HasPrefix(r, ElectionPrefix) {
			resources = append(resources, r)
		}
	}
	sort.Strings(resources)
	var unknown string
	var unknownOps []int
	for _, r := range resources {
		hs := holds[r]
		name := strings.TrimPrefix(r, ElectionPrefix)
		for i, a := range hs {
			for _, b := range hs[i+1:] {
				if b.from >= a.to {
					continue
				}
				if a.possible || b.possible {
					if unknown == "" {
						unknown = fmt.Sprintf("election %q: %s and %s may have led at once (a campaign's outcome is unknown)", name, describeHold(a), describeHold(b))
						unknownOps = []int{ids[a.lock], ids[b.lock]}
					}
					continue
				}
				violate([]int{ids[a.lock], ids[b.lock]}, "election %q: two leaders at once: %s elected at %s (term %d) while %s led until %s (term %d, %s)",
					name, b.who(), ms(b.from), b.token, a.who(), ms(a.to), a.token, a.why)
			}
		}
		var prev *hold
		for _, hd := range hs {
			if hd.possible {
				continue
			}
			switch {
			case hd.token == 0:
				violate([]int{ids[hd.lock]}, "election %q: %s elected at %s without a term", name, hd.who(), ms(hd.from))
			case prev != nil && hd.token <= prev.token:
				violate([]int{ids[prev.lock], ids[hd.lock]}, "election %q: terms do not increase: %s elected at %s with term %d, after %s elected at %s with term %d",
					name, hd.who(), ms(hd.from), hd.token, prev.who(), ms(prev.from), prev.token)
			}
			prev = hd
		}
	}
	// Liveness: failovers outside the faults (and their grace) within bound.
	end := h.horizon()
	var faults []span
	for _, f := range h.Faults {
		if f.Kind == "latency" {
			continue
		}
		e := f.End
		if e < 0 {
			e = end
		}
		faults = append(faults, span{f.Start, e + int64(grace)})
	}
	faults = union(faults)
	for _, f := range Failovers(h) {
		for _, g := range subtract([]span{{f.From, f.To}}, faults) {
			if time.Duration(g.to-g.from) > bound {
				violate(nil, "election %q: no leader from %s to %s (%s, outside faults), over the bound %v",
					strings.TrimPrefix(f.Resource, ElectionPrefix), ms(g.from), ms(g.to), ms(g.to-g.from), bound)
			}
		}
	}
	switch {
	case res.Violations > 0:
		res.Verdict = Violated
	case unknown != "":
		res.Verdict, res.Counterexample, res.Ops = Unknown, unknown, unknownOps
	}
	return res
}
