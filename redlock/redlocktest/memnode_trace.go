package redlocktest

import (
	"time"

	"dlm/redlock/adapter"
)

// TraceEntry is one key of one request a MemNode applied, as its trace
// keeps it (SetTrace): what the request asked, what the node answered, and
// what the key held afterwards by the node's own clock. A request on a set
// of keys gives one entry per key. Requests refused because the node was
// down are not applied and not traced.
type TraceEntry struct {
	// At is the reference time at which the node applied the request.
	At time.Time
	// Offset is the node's clock minus the reference clock at At, and Rate
	// the rate the node's clock ran at (SetClockRate).
	Offset time.Duration
	Rate   float64
	// Op is the operation; OpName names it, internal operations included.
	Op adapter.Op
	// Key is the key and Value the value the request carried.
	Key, Value string
	// OK and Err are the answer.
	OK  bool
	Err error
	// Holds is the value the key held after the request ("" when it did
	// not exist, or is a hash of readers), and Life what was left of its
	// life on the node's clock (NoExpiry: none).
	Holds string
	Life  time.Duration
}

// OpName returns the name of the entry's operation.
func (e TraceEntry) OpName() string {
	switch e.Op {
	case opAcquireFenced:
		return "acquire-fenced"
	case opRaiseFence:
		return "raise-fence"
	case opAcquireAllFenced:
		return "acquire-all-fenced"
	case opRaiseFences:
		return "raise-fences"
	case opPutRecord:
		return "put-record"
	case opReadRecord:
		return "read-record"
	case opWAcquireFenced:
		return "wacquire-fenced"
	case opAcquireFencedFloor:
		return "acquire-fenced-floor"
	case opRaiseFenceRepair:
		return "raise-fence-repair"
	}
	return e.Op.String()
}

// End returns the reference time at which the key's life ends if the
// node's clock keeps its rate: the zero time when the key does not exist or
// has no expiry.
func (e TraceEntry) End() time.Time {
	if e.Life <= 0 {
		return time.Time{}
	}
	return e.At.Add(time.Duration(float64(e.Life) / e.Rate))
}

// SetTrace starts keeping a trace of the requests the node applies, from
// an empty one (on), or stops and drops it (off): every request but the
// acquisitions refused because a key was held, which change nothing and are
// the most frequent under contention. The trace grows without bound while
// it is on: it is there to explain a failed test.
func (n *MemNode) SetTrace(on bool) {
	n.mu.Lock()
	n.tracing, n.trace = on, nil
	n.mu.Unlock()
}

// Trace returns a copy of the trace kept since SetTrace(true), in the
// order the requests were applied.
func (n *MemNode) Trace() []TraceEntry {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]TraceEntry(nil), n.trace...)
}

// traceLocked adds c's keys to the trace, with c's result. Called with n.mu
// held, right after c was applied.
func (n *MemNode) traceLocked(c *memCall) {
	if !n.tracing {
		return
	}
	if !c.res.ok && c.res.err == nil {
		switch c.req.Op {
		case adapter.OpAcquire, opAcquireFenced, adapter.OpAcquireAll, opAcquireAllFenced, opRestoreAll, adapter.OpRAcquire, opAcquireFencedFloor:
			return // refused: nothing changed
		}
	}
	keys := c.req.Keys
	if c.req.Key != "" {
		keys = []string{c.req.Key}
	}
	at := n.base()
	now := n.nowLocked(at)
	for _, k := range keys {
		e := TraceEntry{At: at, Offset: now.Sub(at), Rate: n.rate, Op: c.req.Op, Key: k, Value: c.req.Value, OK: c.res.ok, Err: c.res.err}
		if cur, ok := n.keys[k]; ok {
			e.Holds = cur.value
			if cur.expires.IsZero() {
				e.Life = NoExpiry
			} else {
				e.Life = cur.expires.Sub(now)
			}
		}
		n.trace = append(n.trace, e)
	}
}
