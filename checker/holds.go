package checker

import "sort"

// Hold is the interval during which one grant was believed held, as the
// checks derive it from a history (CheckMutex's intervals), for reports
// that draw them.
type Hold struct {
	// Lock names the grant; Client and Resource are its acquisition's.
	Lock, Client, Resource string
	// From and To bound the interval: the acquisition's completion (its
	// invocation when its outcome is unknown) to the validity end or the
	// start of the release, in nanoseconds since the start of the run.
	From, To int64
	// Token is the grant's fencing token (0: none).
	Token uint64
	// Possible is true when the acquisition's outcome is unknown: the
	// grant may have been held.
	Possible bool
	// Shared is true for a read hold (ModeRead), which may overlap other
	// read holds.
	Shared bool
	// Why says what ended the interval ("validity end", "release", ...).
	Why string
}

// Holds returns, per resource, the intervals during which grants were
// believed held, ordered by their start.
func (h *History) Holds() map[string][]Hold {
	out := map[string][]Hold{}
	for r, hs := range h.holds() {
		for _, hd := range hs {
			out[r] = append(out[r], Hold{Lock: hd.lock, Client: hd.client, Resource: hd.resource, From: hd.from, To: hd.to,
				Token: hd.token, Possible: hd.possible, Shared: hd.shared, Why: hd.why})
		}
		sort.SliceStable(out[r], func(i, j int) bool { return out[r][i].From < out[r][j].From })
	}
	return out
}

// Horizon returns the last time the history mentions: the latest start or
// end of an operation or a fault.
func (h *History) Horizon() int64 { return h.horizon() }

// OutOfRange describes the first value of h that no run can have produced
// and that the checks' arithmetic cannot take (a negative time, a ttl or a
// time beyond about 146 years, a validity end before its acquisition), or
// returns "". The checks answer Unknown for such a history.
func (h *History) OutOfRange() string { return h.outOfRange() }
