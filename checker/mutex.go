package checker

import (
	"fmt"
	"sort"
)

// CheckMutex checks mutual exclusion (R1.1) over h: no two grants of one
// resource were believed held at overlapping times, except two read holds
// (Op.Mode ModeRead: read-write locks admit any number of readers at once);
// a read hold and a write hold, or two write holds, never overlap. A grant is believed held
// from the completion of its acquisition until the earliest of its validity
// end (R9, moved by extensions that succeeded while it was valid, R17) and
// the start of its release. An extension that succeeded after the validity
// had ended resurrected the lock, which is a violation too. Overlaps that
// involve an acquisition whose outcome is unknown make the verdict Unknown,
// unless a definite violation exists.
//
// A history with values out of range (a ttl whose end overflows, negative
// times) is Unknown: its intervals mean nothing.
func CheckMutex(h *History) Result {
	res := Result{Check: "mutex"}
	if why := h.outOfRange(); why != "" {
		res.Verdict, res.Counterexample = Unknown, "values out of range: "+why
		return res
	}
	holds := h.holds()
	resources := make([]string, 0, len(holds))
	for r := range holds {
		resources = append(resources, r)
	}
	sort.Strings(resources)
	ids := opIDs(h)
	var unknown string
	var unknownOps []int
	for _, r := range resources {
		hs := holds[r]
		for i, a := range hs {
			for _, b := range hs[i+1:] {
				// b.from >= a.from (sorted): they overlap iff b began
				// before a ended.
				if b.from >= a.to || b.lock == a.lock || a.shared && b.shared {
					continue
				}
				if a.possible || b.possible {
					if unknown == "" {
						unknown = fmt.Sprintf("resource %q: %s and %s may have overlapped (%s)", r, describeHold(a), describeHold(b), "an acquisition's outcome is unknown")
						unknownOps = []int{ids[a.lock], ids[b.lock]}
					}
					continue
				}
				res.Violations++
				if res.Counterexample == "" {
					res.Counterexample = fmt.Sprintf("resource %q: %s acquired it at %s, while %s still held it until %s (%s), %s later",
						r, b.who(), ms(b.from), a.who(), ms(a.to), a.why, ms(a.to-b.from))
					res.Ops = []int{ids[a.lock], ids[b.lock]}
				}
			}
		}
	}
	// R17: an extension never resurrects an expired lock.
	for _, o := range h.Ops {
		if o.Kind != Extend || !o.OK {
			continue
		}
		var hd *hold
		for _, x := range holds[o.Resource] {
			if x.lock == o.Lock {
				hd = x
			}
		}
		if hd == nil || hd.possible || o.Start <= hd.to {
			continue
		}
		res.Violations++
		if res.Counterexample == "" {
			res.Counterexample = fmt.Sprintf("resource %q: %s extended lock %s at %s, after its validity ended at %s: the lock was resurrected",
				o.Resource, o.Client, o.Lock, ms(o.Start), ms(hd.to))
			res.Ops = []int{ids[o.Lock], o.ID}
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

func (hd *hold) who() string {
	if hd.shared {
		return fmt.Sprintf("%s (read lock %s)", hd.client, hd.lock)
	}
	return fmt.Sprintf("%s (lock %s)", hd.client, hd.lock)
}

func describeHold(hd *hold) string {
	return fmt.Sprintf("%s [%s, %s]", hd.who(), ms(hd.from), ms(hd.to))
}

// opIDs maps each grant to the id of its acquisition.
func opIDs(h *History) map[string]int {
	m := map[string]int{}
	for _, o := range h.Ops {
		if o.Kind == Acquire {
			m[o.Lock] = o.ID
		}
	}
	return m
}
