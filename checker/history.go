package checker

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// Kind is the kind of an operation in a History.
type Kind string

// The kinds of operations a History records.
const (
	// Acquire is an acquisition (R8): Lock or TryLock.
	Acquire Kind = "acquire"
	// Release is an Unlock (R12).
	Release Kind = "release"
	// Extend is an extension of a held lock (R17).
	Extend Kind = "extend"
	// Write is a write to the protected register, carrying the writer's grant.
	Write Kind = "write"
	// Read is a read of the protected register.
	Read Kind = "read"
)

// Mode is how an acquisition holds its resource: exclusively (a plain lock
// or a writer) or shared with other readers (read-write locks).
type Mode string

// The modes of an acquisition. The empty mode is ModeWrite, so that
// histories recorded before read-write locks keep their meaning.
const (
	// ModeWrite is an exclusive hold: Lock, TryLock, WLock, TryWLock.
	ModeWrite Mode = "write"
	// ModeRead is a hold shared with other readers: RLock, TryRLock.
	ModeRead Mode = "read"
)

// Op is one operation in a History: an invocation at Start and its
// completion at End, in nanoseconds since the start of the run on one
// monotonic clock. End is -1 while the outcome is unknown (the client crashed
// or the run ended first).
type Op struct {
	// ID numbers the operation, unique in its history.
	ID int `json:"id"`
	// Client names the client that invoked it.
	Client string `json:"client"`
	// Resource is the lock's resource, or the register's name for writes and
	// reads.
	Resource string `json:"resource"`
	// Kind says what the operation is.
	Kind Kind `json:"kind"`
	// Lock names the grant the operation belongs to: the acquisition that
	// created it and every release, extension and write made under it.
	Lock string `json:"lock,omitempty"`
	// Start is the invocation time.
	Start int64 `json:"start"`
	// End is the completion time, or -1 when unknown.
	End int64 `json:"end"`
	// OK is the outcome: acquired, released, extended, or (for writes) the
	// register accepted the write.
	OK bool `json:"ok"`
	// TTL is the ttl asked for (acquisitions), in nanoseconds.
	TTL int64 `json:"ttl,omitempty"`
	// Until is the end of the validity the client computed (acquisitions and
	// extensions that succeeded): T1 + ttl - drift (R9).
	Until int64 `json:"until,omitempty"`
	// Token is the fencing token of the grant (R18), 0 when none was issued.
	Token uint64 `json:"token,omitempty"`
	// Value is the value written or read.
	Value string `json:"value,omitempty"`
	// Nodes is each node's outcome in an acquisition, in node order.
	Nodes []string `json:"nodes,omitempty"`
	// Err is the error the client saw, if any.
	Err string `json:"error,omitempty"`
	// Mode is how an acquisition holds its resource (ModeRead: shared
	// with readers); empty means ModeWrite. Only acquisitions carry it.
	Mode Mode `json:"mode,omitempty"`
}

// Pending reports whether the operation's outcome is unknown.
func (o Op) Pending() bool { return o.End < 0 }

// Fault is a fault injected during a run, from Start to End (nanoseconds
// since the start of the run; End is -1 if it was never healed).
type Fault struct {
	// Kind names the fault: "kill", "restart", "pause-node", "latency",
	// "partition", "clock-jump", "pause-client", "lie".
	Kind string `json:"kind"`
	// Target names what it hit: node names, or a client.
	Target string `json:"target"`
	// Start is when it began.
	Start int64 `json:"start"`
	// End is when it was healed, -1 if never.
	End int64 `json:"end"`
	// Note says more, in words ("restart without persistence, 0s delay").
	Note string `json:"note,omitempty"`
}

// History is what a run recorded: every operation of every client and every
// fault, on one monotonic clock.
type History struct {
	// Nodes is the number of lock nodes.
	Nodes int `json:"nodes"`
	// Fenced says whether the register rejected stale tokens.
	Fenced bool `json:"fenced"`
	// Ops are the operations, in invocation order.
	Ops []Op `json:"ops"`
	// Faults are the faults, in the order they began.
	Faults []Fault `json:"faults"`
}

// LoadHistory reads a History in JSON from path.
func LoadHistory(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeHistory(f)
}

// DecodeHistory reads a History in JSON from r and checks that it is well
// formed: unique ids, completions not before invocations, and an acquisition
// for every grant that other operations name.
func DecodeHistory(r io.Reader) (*History, error) {
	var h History
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("checker: history: %w", err)
	}
	if err := h.Validate(); err != nil {
		return nil, err
	}
	return &h, nil
}

// Validate checks that the history is well formed.
func (h *History) Validate() error {
	ids := map[int]bool{}
	grants := map[string]bool{}
	for _, o := range h.Ops {
		if ids[o.ID] {
			return fmt.Errorf("checker: history: duplicate op id %d", o.ID)
		}
		ids[o.ID] = true
		if o.End >= 0 && o.End < o.Start {
			return fmt.Errorf("checker: history: op %d ends (%d) before it starts (%d)", o.ID, o.End, o.Start)
		}
		switch o.Kind {
		case Acquire:
			if o.Lock == "" {
				return fmt.Errorf("checker: history: acquisition %d names no lock", o.ID)
			}
			if o.Mode != "" && o.Mode != ModeRead && o.Mode != ModeWrite {
				return fmt.Errorf("checker: history: acquisition %d has mode %q (want read, write or none)", o.ID, o.Mode)
			}
			grants[o.Lock] = true
		case Release, Extend, Write, Read:
			if o.Mode != "" {
				return fmt.Errorf("checker: history: op %d is a %s with mode %q: only acquisitions have a mode", o.ID, o.Kind, o.Mode)
			}
		default:
			return fmt.Errorf("checker: history: op %d has unknown kind %q (want acquire, release, extend, write or read)", o.ID, o.Kind)
		}
	}
	for _, o := range h.Ops {
		if o.Lock != "" && o.Kind != Acquire && o.Kind != Read && !grants[o.Lock] {
			return fmt.Errorf("checker: history: op %d names lock %q, which no acquisition created", o.ID, o.Lock)
		}
	}
	return nil
}

// maxTime bounds every time and ttl of a history, in nanoseconds (about
// 146 years): beyond it, sums such as start + ttl may overflow int64.
const maxTime = int64(1) << 62

// outOfRange describes the first value of h that no run can have produced
// and that the checks' arithmetic cannot take (a negative time, a ttl or
// time beyond maxTime, a validity end before its acquisition), or returns
// "".
func (h *History) outOfRange() string {
	in := func(v int64) bool { return v >= 0 && v <= maxTime }
	for _, o := range h.Ops {
		switch {
		case !in(o.Start):
			return fmt.Sprintf("op %d starts at %d ns", o.ID, o.Start)
		case o.End != -1 && !in(o.End):
			return fmt.Sprintf("op %d ends at %d ns", o.ID, o.End)
		case !in(o.TTL):
			return fmt.Sprintf("op %d has ttl %d ns (at most %d)", o.ID, o.TTL, maxTime)
		case o.Until != 0 && !in(o.Until):
			return fmt.Sprintf("op %d has validity end %d ns", o.ID, o.Until)
		case o.Kind == Acquire && o.OK && !o.Pending() && o.Until < o.Start:
			return fmt.Sprintf("acquisition %d is valid until %d ns, before it started (%d ns)", o.ID, o.Until, o.Start)
		}
	}
	for i, f := range h.Faults {
		if !in(f.Start) || f.End != -1 && !in(f.End) {
			return fmt.Sprintf("fault %d spans %d..%d ns", i, f.Start, f.End)
		}
	}
	return ""
}

// WriteJSON writes the history as indented JSON.
func (h *History) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(h)
}

// ms formats nanoseconds since the start of the run as milliseconds.
func ms(ns int64) string { return fmt.Sprintf("%.1fms", float64(ns)/float64(time.Millisecond)) }

// hold is the interval during which a grant was believed held.
type hold struct {
	lock     string
	client   string
	resource string
	invoked  int64 // the acquisition's invocation
	from, to int64 // acquisition completed .. validity end or release start
	token    uint64
	order    int  // grant order per resource: by completion of the acquisition
	possible bool // the acquisition's outcome is unknown: maybe held
	shared   bool // a read hold (ModeRead): overlaps other read holds
	why      string
}

// holds derives, per resource, the grants and the intervals they were
// believed held, ordered by acquisition completion.
func (h *History) holds() map[string][]*hold {
	byLock := map[string]*hold{}
	out := map[string][]*hold{}
	for _, o := range h.Ops {
		if o.Kind != Acquire || !(o.OK || o.Pending()) {
			continue
		}
		hd := &hold{lock: o.Lock, client: o.Client, resource: o.Resource, token: o.Token, invoked: o.Start, shared: o.Mode == ModeRead}
		if o.Pending() {
			// Unknown outcome: the keys may have been set from the
			// invocation for up to one ttl.
			hd.from, hd.to, hd.possible, hd.why = o.Start, o.Start+o.TTL, true, "acquisition outcome unknown"
		} else {
			hd.from, hd.to, hd.why = o.End, o.Until, "validity end"
		}
		byLock[o.Lock] = hd
		out[o.Resource] = append(out[o.Resource], hd)
	}
	for _, o := range h.Ops {
		hd := byLock[o.Lock]
		if hd == nil || hd.possible {
			continue
		}
		switch {
		case o.Kind == Extend && o.OK && o.Until > hd.to && o.Start <= hd.to:
			hd.to, hd.why = o.Until, "validity end after extension"
		case o.Kind == Release && o.Start < hd.to:
			hd.to, hd.why = o.Start, "release"
		}
	}
	for _, hs := range out {
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].from < hs[j].from })
		for i, hd := range hs {
			hd.order = i + 1
		}
	}
	return out
}
