package checker

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// rank orders the grants of each resource by the completion of their
// acquisitions, newest highest. While mutual exclusion holds the grants do
// not overlap and this is the order in which they were held; it does not
// trust the fencing tokens, which CheckFencing checks separately.
func rank(h *History) map[string]uint64 {
	out := map[string]uint64{}
	for _, hs := range h.holds() {
		for _, hd := range hs {
			out[hd.lock] = uint64(hd.order)
		}
	}
	return out
}

// StaleWrite is a write the register accepted from an older grant after it
// had accepted a write from a newer one.
type StaleWrite struct {
	// Write is the stale write.
	Write Op
	// After is the newest grant's accepted write that completed before
	// Write was invoked, or, for a write that landed late, the reader's own
	// write.
	After Op
	// Read is the newer holder's read that found Write's value, for a
	// write that landed late; nil otherwise.
	Read *Op
}

// StaleWrites returns the stale writes of h (R18): accepted writes from an
// older grant invoked after a newer grant's accepted write had completed,
// then accepted writes from an older grant whose value a newer holder read
// back, under its own lock, after its own write (a write delayed in flight
// that landed late).
func StaleWrites(h *History) []StaleWrite {
	rk := rank(h)
	var writes []Op
	for _, o := range h.Ops {
		if o.Kind == Write && o.OK && !o.Pending() {
			writes = append(writes, o)
		}
	}
	sort.SliceStable(writes, func(i, j int) bool { return writes[i].Start < writes[j].Start })
	var out []StaleWrite
	for i, w := range writes {
		// The newest grant among the accepted writes that finished before w
		// began.
		var newest *Op
		for j := range writes[:i] {
			p := &writes[j]
			if p.Resource == w.Resource && p.End < w.Start && rk[p.Lock] > rk[w.Lock] && (newest == nil || rk[p.Lock] > rk[newest.Lock]) {
				newest = p
			}
		}
		if newest != nil {
			out = append(out, StaleWrite{Write: w, After: *newest})
		}
	}
	// A write delayed in flight is invoked before the newer grant's write
	// and lands after it: the newer holder, reading under its own lock after
	// its own write, finds the older grant's value.
	counted := map[int]bool{}
	for _, sw := range out {
		counted[sw.Write.ID] = true
	}
	for _, r := range h.Ops {
		if r.Kind != Read || r.Lock == "" || r.Pending() {
			continue
		}
		var own *Op
		for j := range writes {
			if p := &writes[j]; p.Lock == r.Lock && p.End < r.Start {
				own = p
			}
		}
		if own == nil {
			continue
		}
		for j := len(writes) - 1; j >= 0; j-- {
			w := writes[j]
			if w.Resource == r.Resource && w.Value == r.Value && w.Start < r.End {
				if rk[w.Lock] < rk[r.Lock] && !counted[w.ID] {
					counted[w.ID] = true
					rr := r
					out = append(out, StaleWrite{Write: w, After: *own, Read: &rr})
				}
				break
			}
		}
	}
	return out
}

// CheckFencing checks the protected resource (R18): it never accepted a
// write from an older grant once a write from a newer grant had been
// accepted (completed before the older one was invoked). Each such accepted
// write is a stale write; Result.Violations counts them. Grants are ordered
// by the completion of their acquisitions. When the grants carry fencing
// tokens, it also checks that a grant whose acquisition began after another
// grant's had completed got a strictly greater token: a token that does not
// increase lets the fenced register accept a stale write.
func CheckFencing(h *History) Result {
	res := Result{Check: "fencing"}
	for _, sw := range StaleWrites(h) {
		res.Violations++
		if res.Counterexample == "" {
			w, newest, rk := sw.Write, sw.After, rank(h)
			if r := sw.Read; r != nil {
				res.Counterexample = fmt.Sprintf("register %q accepted a stale write that landed late: %s's write %q under lock %s (grant %d), invoked at %s, completed at %s, after %s's write under the newer lock %s (grant %d) completed at %s; %s read %q back under its lock at %s",
					w.Resource, w.Client, w.Value, w.Lock, rk[w.Lock], ms(w.Start), ms(w.End), newest.Client, newest.Lock, rk[newest.Lock], ms(newest.End), r.Client, r.Value, ms(r.Start))
				res.Ops = []int{newest.ID, w.ID, r.ID}
				continue
			}
			res.Counterexample = fmt.Sprintf("register %q accepted a stale write: %s wrote %q under lock %s (grant %d) at %s, after %s's write %q under the newer lock %s (grant %d) was accepted at %s",
				w.Resource, w.Client, w.Value, w.Lock, rk[w.Lock], ms(w.Start), newest.Client, newest.Value, newest.Lock, rk[newest.Lock], ms(newest.End))
			res.Ops = []int{newest.ID, w.ID}
		}
	}
	for _, hs := range h.holds() {
		for _, a := range hs {
			for _, b := range hs {
				if a.token == 0 || b.token == 0 || a.possible || b.possible || a.from >= b.invoked || b.token > a.token {
					continue
				}
				res.Violations++
				if res.Counterexample == "" {
					res.Counterexample = fmt.Sprintf("resource %q: fencing token did not increase: %s got token %d at %s, after %s had got token %d at %s",
						b.resource, b.who(), b.token, ms(b.from), a.who(), a.token, ms(a.from))
					res.Ops = []int{opIDs(h)[a.lock], opIDs(h)[b.lock]}
				}
			}
		}
	}
	if res.Violations > 0 {
		res.Verdict = Violated
	}
	return res
}

// registerInput is one register operation as porcupine sees it.
type registerInput struct {
	write bool
	token uint64
	value string
}

// registerState is the register's state: the highest accepted token and the
// value.
type registerState struct {
	max   uint64
	value string
}

// registerModel is the sequential specification of the protected register:
// a fenced register accepts a write iff its token is at least the highest
// it accepted (R18); a plain one accepts every write. Reads return the value.
func registerModel(fenced bool) porcupine.Model {
	return porcupine.Model{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var names []string
			for _, op := range ops {
				r := op.Metadata.(string)
				if _, ok := by[r]; !ok {
					names = append(names, r)
				}
				by[r] = append(by[r], op)
			}
			out := make([][]porcupine.Operation, 0, len(names))
			for _, n := range names {
				out = append(out, by[n])
			}
			return out
		},
		Init: func() any { return registerState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in := state.(registerState), input.(registerInput)
			if !in.write {
				return output.(string) == s.value, s
			}
			accept := !fenced || in.token >= s.max
			if accept != output.(bool) {
				return false, s
			}
			if accept {
				return true, registerState{max: max(s.max, in.token), value: in.value}
			}
			return true, s
		},
		DescribeOperation: func(input, output any) string {
			in := input.(registerInput)
			if in.write {
				return fmt.Sprintf("write(%q, token %d) -> accepted=%v", in.value, in.token, output)
			}
			return fmt.Sprintf("read() -> %q", output)
		},
	}
}

// CheckLinearizable checks that the register's operations in h are
// linearizable against the register's sequential model (fenced when
// h.Fenced), with porcupine. Operations with unknown outcomes are left out
// (a write whose outcome is unknown may or may not have happened, which the
// model cannot express); timeout bounds the search, after which the verdict
// is Unknown.
func CheckLinearizable(h *History, timeout time.Duration) Result {
	res := Result{Check: "linearizable"}
	var ops []porcupine.Operation
	clients := map[string]int{}
	for _, o := range h.Ops {
		if o.Kind != Write && o.Kind != Read {
			continue
		}
		if o.Pending() {
			continue
		}
		id, ok := clients[o.Client]
		if !ok {
			id = len(clients)
			clients[o.Client] = id
		}
		op := porcupine.Operation{ClientId: id, Call: o.Start, Return: o.End, Metadata: o.Resource}
		if o.Kind == Write {
			op.Input, op.Output = registerInput{write: true, token: o.Token, value: o.Value}, o.OK
		} else {
			op.Input, op.Output = registerInput{}, o.Value
		}
		ops = append(ops, op)
	}
	switch porcupine.CheckOperationsTimeout(registerModel(h.Fenced), ops, timeout) {
	case porcupine.Illegal:
		res.Verdict, res.Violations = Violated, 1
		kind := "plain"
		if h.Fenced {
			kind = "fenced"
		}
		res.Counterexample = fmt.Sprintf("the register's %d operations have no linearization as a %s register", len(ops), kind)
	case porcupine.Unknown:
		res.Verdict = Unknown
		res.Counterexample = fmt.Sprintf("porcupine found no answer within %v", timeout)
	}
	return res
}
