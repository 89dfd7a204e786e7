package checker

import (
	"fmt"
	"sort"
	"time"
)

// span is a half-open interval [from, to) of run time in nanoseconds.
type span struct{ from, to int64 }

// union merges overlapping spans, sorted.
func union(s []span) []span {
	sort.Slice(s, func(i, j int) bool { return s[i].from < s[j].from })
	var out []span
	for _, x := range s {
		if x.to <= x.from {
			continue
		}
		if n := len(out); n > 0 && x.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, x.to)
			continue
		}
		out = append(out, x)
	}
	return out
}

// subtract returns the parts of a (merged) not covered by b (merged).
func subtract(a, b []span) []span {
	var out []span
	for _, x := range a {
		cur := x.from
		for _, y := range b {
			if y.to <= cur || y.from >= x.to {
				continue
			}
			if y.from > cur {
				out = append(out, span{cur, y.from})
			}
			cur = max(cur, y.to)
		}
		if cur < x.to {
			out = append(out, span{cur, x.to})
		}
	}
	return out
}

// horizon is the last instant the history mentions.
func (h *History) horizon() int64 {
	var t int64
	for _, o := range h.Ops {
		t = max(t, o.Start, o.End)
	}
	for _, f := range h.Faults {
		t = max(t, f.Start, f.End)
	}
	return t
}

// Unavailable is a window in which a client wanted a resource and nobody
// held it.
type Unavailable struct {
	// Resource is the resource.
	Resource string
	// From and To bound the window, in nanoseconds since the start of the
	// run.
	From, To int64
}

// Duration is the window's length.
func (u Unavailable) Duration() time.Duration { return time.Duration(u.To - u.From) }

// unavailable returns, per resource, the windows in which some acquisition
// was in progress and no grant was (or may have been) held, minus the spans
// in excluded.
func (h *History) unavailable(excluded []span) []Unavailable {
	end := h.horizon()
	wants := map[string][]span{}
	held := map[string][]span{}
	for _, o := range h.Ops {
		if o.Kind != Acquire {
			continue
		}
		e := o.End
		if e < 0 {
			e = end
		}
		wants[o.Resource] = append(wants[o.Resource], span{o.Start, e})
	}
	for r, hs := range h.holds() {
		for _, hd := range hs {
			held[r] = append(held[r], span{hd.from, hd.to})
		}
	}
	var out []Unavailable
	for r, w := range wants {
		gaps := subtract(union(w), union(held[r]))
		gaps = subtract(gaps, union(excluded))
		for _, g := range gaps {
			out = append(out, Unavailable{Resource: r, From: g.from, To: g.to})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Duration() != out[j].Duration() {
			return out[i].Duration() > out[j].Duration()
		}
		return out[i].From < out[j].From
	})
	return out
}

// MaxUnavailable returns the longest window of h in which a client wanted a
// resource (an acquisition was in progress) and no grant of it was held,
// faults or not; ok is false when there was none.
func MaxUnavailable(h *History) (u Unavailable, ok bool) {
	all := h.unavailable(nil)
	if len(all) == 0 {
		return Unavailable{}, false
	}
	return all[0], true
}

// CheckLiveness checks deadlock freedom and fault tolerance (R1.2, R1.3)
// where the history allows: outside every fault other than added latency
// (a slow node leaves a quorum of others), and outside one grace
// period after each fault heals (the availability penalty of R14: keys of a
// holder cut off by the fault live up to one ttl), no window in which a
// client wanted a resource and nobody held it lasted longer than bound. The
// verdict is Unknown when no acquisition was made outside the faults.
func CheckLiveness(h *History, bound, grace time.Duration) Result {
	res := Result{Check: "liveness"}
	if why := h.outOfRange(); why != "" {
		res.Verdict, res.Counterexample = Unknown, "values out of range: "+why
		return res
	}
	end := h.horizon()
	var faults []span
	for _, f := range h.Faults {
		if f.Kind == "latency" {
			continue // a slow node is no excuse: the others make a quorum
		}
		e := f.End
		if e < 0 {
			e = end
		}
		faults = append(faults, span{f.Start, e + int64(grace)})
	}
	healthy := false
	for _, o := range h.Ops {
		if o.Kind != Acquire {
			continue
		}
		e := o.End
		if e < 0 {
			e = end
		}
		if len(subtract([]span{{o.Start, max(e, o.Start+1)}}, union(append([]span(nil), faults...)))) > 0 {
			healthy = true
			break
		}
	}
	if !healthy {
		res.Verdict = Unknown
		res.Counterexample = "no acquisition was attempted outside the fault windows"
		return res
	}
	for _, u := range h.unavailable(faults) {
		if u.Duration() <= bound {
			break
		}
		res.Violations++
		if res.Counterexample == "" {
			res.Counterexample = fmt.Sprintf("resource %q: wanted and held by nobody from %s to %s (%v), with no fault active: longer than the bound %v",
				u.Resource, ms(u.From), ms(u.To), u.Duration().Round(time.Millisecond), bound)
		}
	}
	if res.Violations > 0 {
		res.Verdict = Violated
	}
	return res
}
