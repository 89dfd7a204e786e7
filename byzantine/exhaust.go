package byzantine

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"slices"
	"strings"
)

// ExhaustOptions says what Exhaust enumerates beyond the run's Config.
type ExhaustOptions struct {
	// Domain is the set of orders traitors may send, and the orders a
	// loyal commander is tried with. Empty means attack and retreat.
	Domain []Order
	// Faulty, when not nil, is the one traitor set to search (for example
	// {1, 2}); nil searches every set of at most m generals.
	Faulty []ID
	// NoSymmetry searches every traitor set instead of one per class of
	// sets equal up to renaming the lieutenants.
	NoSymmetry bool
	// MaxRuns bounds the runs; 0 means MaxExhaustRuns. A search that hits
	// it, or whose ctx ends, returns a result with Complete false.
	MaxRuns int
}

// MaxExhaustRuns is the default bound on the runs of one Exhaust.
const MaxExhaustRuns = 5_000_000

// MaxExhaustStates bounds the distinct final states Exhaust remembers, so
// that its memory stays bounded however long it runs.
const MaxExhaustStates = 1 << 20

// maxSentKept bounds what one run records of the traitors' messages for
// a counterexample.
const maxSentKept = 2000

// ExhaustSet is the search over one traitor set.
type ExhaustSet struct {
	// Traitors is the set searched.
	Traitors []ID `json:"traitors"`
	// Stands is how many traitor sets it stands for: those equal to it up
	// to renaming the lieutenants (1 without symmetry reduction).
	Stands int `json:"stands_for"`
	// Runs is the number of runs made for it: every loyal order (one run
	// when the commander is a traitor) times every behaviour.
	Runs int `json:"runs"`
	// Violations counts the runs that broke IC1 or IC2.
	Violations int `json:"violations"`
	// Complete is false when the search stopped before its end.
	Complete bool `json:"complete"`
	// Covered is the share of the set's runs that were made, from 0 to 1
	// (1 when Complete). The runs of every set are made in turn, one set
	// after the other, so a search stopped by its budget has covered every
	// set about equally, small sets wholly.
	Covered float64 `json:"covered"`
}

// ExhaustResult reports an exhaustive search: what was enumerated, what
// was not, and what was found.
type ExhaustResult struct {
	// Algorithm, Generals and MaxTraitors are the run's.
	Algorithm   Algorithm `json:"algorithm"`
	Generals    int       `json:"generals"`
	MaxTraitors int       `json:"max_traitors"`
	// Domain is the value domain.
	Domain []Order `json:"domain"`
	// Adversary states the finite adversary whose every behaviour was run.
	Adversary []string `json:"adversary"`
	// NotEnumerated states what the search did not cover.
	NotEnumerated []string `json:"not_enumerated"`
	// Sets are the traitor sets searched, in order.
	Sets []ExhaustSet `json:"sets"`
	// SetsCovered is how many traitor sets the searched ones stand for.
	SetsCovered int `json:"sets_covered"`
	// Runs is the total number of runs (behaviours times loyal orders).
	Runs int `json:"runs"`
	// States is the number of distinct final states of the loyal
	// generals (their decisions and what they hold: OM's received values,
	// SM's sets V) over all runs, told apart by a 64-bit hash; at most
	// MaxExhaustStates are kept (StatesCapped).
	States int `json:"states"`
	// StatesCapped is true when States stopped counting at
	// MaxExhaustStates, to bound the search's memory.
	StatesCapped bool `json:"states_capped,omitempty"`
	// IC1Violations and IC2Violations count the runs that broke each.
	IC1Violations int `json:"ic1_violations"`
	IC2Violations int `json:"ic2_violations"`
	// Counterexamples holds the first run that broke IC1 and the first
	// that broke IC2 (one entry when the same run broke both).
	Counterexamples []Counterexample `json:"counterexamples,omitempty"`
	// Complete is true when every run of every set was made: only then do
	// zero violations prove something (for this adversary and domain).
	Complete bool `json:"complete"`
}

// Violations returns the number of runs that broke IC1 or IC2.
func (r *ExhaustResult) Violations() int {
	n := 0
	for _, s := range r.Sets {
		n += s.Violations
	}
	return n
}

// Counterexample is one traitor behaviour that breaks IC1 or IC2.
type Counterexample struct {
	// Traitors are the traitors' ids.
	Traitors []ID `json:"traitors"`
	// Order is the commander's order of the run (meaningless when the
	// commander is a traitor).
	Order Order `json:"order"`
	// Sent lists what the traitors sent to loyal generals, round by round,
	// as "r1: 1 -> 3 attack:0:1", or "... nothing" for a message an OM
	// traitor did not send.
	Sent []string `json:"sent"`
	// Decisions are the loyal lieutenants' decisions.
	Decisions map[ID]Order `json:"decisions"`
	// Err is the verdict (wraps ErrIC1 and/or ErrIC2).
	Err string `json:"error"`
}

// chooser enumerates the leaves of a tree of choices whose arities may
// depend on earlier choices: each run replays a prefix and takes the
// first branch beyond it; next moves to the following leaf.
type chooser struct {
	script, arity []int
	pos           int
}

func (c *chooser) choose(k int) int {
	if k <= 1 {
		return 0
	}
	if c.pos < len(c.script) {
		v := c.script[c.pos]
		c.pos++
		return v
	}
	c.script = append(c.script, 0)
	c.arity = append(c.arity, k)
	c.pos++
	return 0
}

// progress returns the share of the leaves enumerated before the next
// one (exact when the arities do not depend on earlier choices).
func (c *chooser) progress() float64 {
	p, w := 0.0, 1.0
	for i := range c.script {
		w /= float64(c.arity[i])
		p += float64(c.script[i]) * w
	}
	return p
}

func (c *chooser) next() bool {
	c.script, c.arity = c.script[:c.pos], c.arity[:c.pos]
	c.pos = 0
	for i := len(c.script) - 1; i >= 0; i-- {
		if c.script[i]+1 < c.arity[i] {
			c.script[i]++
			c.script, c.arity = c.script[:i+1], c.arity[:i+1]
			return true
		}
	}
	return false
}

// Exhaust runs cfg (its Algorithm, Generals, MaxTraitors, Majority, Seed,
// Seq and AllowUnsafe; Order, Faulty, Crashes and Faults are replaced) for
// every traitor set of at most m generals (or opts.Faulty), every loyal
// order of the domain, and every behaviour of the traitors in this finite
// adversary:
//
//   - OM: every message a traitor sends to a loyal general, for every relay
//     path and round, is any order of the domain or nothing.
//   - SM: the traitors pool their keys. In each round they send each loyal
//     lieutenant any subset of the orders for which they hold a valid chain
//     of that round's length not naming it: a chain any traitor received
//     earlier, extended by one or more traitors, or, when the commander is
//     a traitor, its signed order of any value of the domain extended by
//     traitors. A traitorous commander thus sends each lieutenant nothing,
//     one order or several (extra signed orders).
//
// Sets equal up to renaming the lieutenants are searched once (unless
// opts.NoSymmetry): the algorithms treat lieutenants alike and the
// adversary is closed under renaming. The result says what was enumerated
// and what was not. Configurations outside the bounds (OM with n < 3m+1)
// need cfg.AllowUnsafe, as for Run.
func Exhaust(ctx context.Context, cfg Config, opts ExhaustOptions) (*ExhaustResult, error) {
	domain := opts.Domain
	if len(domain) == 0 {
		domain = []Order{Attack, Retreat}
	}
	for _, o := range domain {
		if !o.valid() {
			return nil, fmt.Errorf("%w: domain order %q: want 1 to %d bytes", ErrInvalidConfig, o, MaxOrderLen)
		}
	}
	domain = slices.Compact(slices.Clone(domain))
	maxRuns := opts.MaxRuns
	if maxRuns <= 0 {
		maxRuns = MaxExhaustRuns
	}
	cfg.Faulty, cfg.Crashes, cfg.Trace, cfg.Explain = nil, nil, false, nil
	cfg.Faults = Faults{}
	cfg.Order = domain[0]
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, m := cfg.Generals, cfg.MaxTraitors
	var sets [][]ID
	var stands []int
	switch {
	case opts.Faulty != nil:
		set := slices.Sorted(slices.Values(opts.Faulty))
		set = slices.Compact(set)
		for _, id := range set {
			if id < 0 || int(id) >= n {
				return nil, fmt.Errorf("%w: traitor %d out of range 0..%d", ErrInvalidConfig, id, n-1)
			}
		}
		if len(set) > m && !cfg.AllowUnsafe {
			return nil, fmt.Errorf("%w: %w: %d traitors but the run tolerates m = %d; set AllowUnsafe to search anyway", ErrInvalidConfig, ErrUnsafe, len(set), m)
		}
		sets, stands = [][]ID{set}, []int{1}
	case opts.NoSymmetry:
		for size := 0; size <= m; size++ {
			combinations(n, size, func(c []ID) { sets = append(sets, c); stands = append(stands, 1) })
		}
	default:
		// One set per class: k traitorous lieutenants 1..k, with or
		// without the commander; it stands for C(n-1, k) sets.
		for size := 0; size <= m; size++ {
			for _, cmdr := range []bool{false, true} {
				k := size
				if cmdr {
					k--
				}
				if k < 0 || k > n-1 {
					continue
				}
				var set []ID
				if cmdr {
					set = append(set, 0)
				}
				for i := 1; i <= k; i++ {
					set = append(set, ID(i))
				}
				sets = append(sets, set)
				stands = append(stands, int(new(big.Int).Binomial(int64(n-1), int64(k)).Int64()))
			}
		}
	}
	x := &exhauster{cfg: cfg, domain: domain, states: make(map[uint64]struct{}), memo: make(map[string]bool), signs: make(map[string][]byte)}
	if cfg.Algorithm == SM {
		x.priv, x.pub = DeriveKeys(cfg.Seed, n)
	}
	out := &ExhaustResult{Algorithm: cfg.Algorithm, Generals: n, MaxTraitors: m, Domain: domain, Complete: true}
	out.Adversary, out.NotEnumerated = adversaryText(cfg, domain, opts)
	var firstIC1, firstIC2 bool
	// The sets are searched in turn, one run each, so that a budget
	// (maxRuns, or ctx) is divided fairly: every set gets as many runs as
	// any other until it is complete.
	type search struct {
		es      ExhaustSet
		traitor []bool
		orders  []Order
		oi      int
		ch      chooser
	}
	all := make([]*search, len(sets))
	for i, set := range sets {
		s := &search{es: ExhaustSet{Traitors: set, Stands: stands[i]}, traitor: make([]bool, n), orders: domain}
		for _, id := range set {
			s.traitor[id] = true
		}
		if s.traitor[0] {
			s.orders = domain[:1] // the commander's own order is never sent
		}
		all[i] = s
	}
	active := slices.Clone(all)
	for len(active) > 0 && out.Complete {
		next := active[:0]
		for _, s := range active {
			if out.Runs >= maxRuns || ctx.Err() != nil {
				out.Complete = false
				break
			}
			order := s.orders[s.oi]
			res, key, err := x.run(ctx, s.traitor, order, &s.ch)
			if errors.Is(err, errRunCut) {
				out.Complete = false
				break
			}
			if err != nil {
				return nil, err
			}
			out.Runs++
			s.es.Runs++
			if len(x.states) < MaxExhaustStates {
				x.states[key] = struct{}{}
			} else if _, ok := x.states[key]; !ok {
				out.StatesCapped = true
			}
			if verr := res.Verify(); verr != nil {
				s.es.Violations++
				ic1, ic2 := !res.IC1(), !res.IC2()
				if ic1 {
					out.IC1Violations++
				}
				if ic2 {
					out.IC2Violations++
				}
				if (ic1 && !firstIC1) || (ic2 && !firstIC2) {
					firstIC1, firstIC2 = firstIC1 || ic1, firstIC2 || ic2
					out.Counterexamples = append(out.Counterexamples, Counterexample{
						Traitors: slices.Clone(s.es.Traitors), Order: order, Sent: x.sentText(), Decisions: res.Decisions(), Err: verr.Error()})
				}
			}
			if !s.ch.next() {
				s.oi++
				s.ch = chooser{}
				if s.oi == len(s.orders) {
					s.es.Complete = true
					continue
				}
			}
			next = append(next, s)
		}
		active = next
	}
	for _, s := range all {
		s.es.Covered = 1
		if !s.es.Complete {
			s.es.Covered = (float64(s.oi) + s.ch.progress()) / float64(len(s.orders))
		}
		out.Sets = append(out.Sets, s.es)
		out.SetsCovered += s.es.Stands
	}
	out.States = len(x.states)
	return out, nil
}

// combinations calls f with every subset of {0..n-1} of size k.
func combinations(n, k int, f func([]ID)) {
	cur := make([]ID, 0, k)
	var rec func(start int)
	rec = func(start int) {
		if len(cur) == k {
			f(slices.Clone(cur))
			return
		}
		for i := start; i < n; i++ {
			cur = append(cur, ID(i))
			rec(i + 1)
			cur = cur[:len(cur)-1]
		}
	}
	rec(0)
}

func adversaryText(cfg Config, domain []Order, opts ExhaustOptions) (adv, not []string) {
	ds := make([]string, len(domain))
	for i, o := range domain {
		ds[i] = o.String()
	}
	dom := strings.Join(ds, ", ")
	sets := fmt.Sprintf("every traitor set of 0 to %d generals", cfg.MaxTraitors)
	switch {
	case opts.Faulty != nil:
		sets = fmt.Sprintf("the traitor set %v only", opts.Faulty)
	case !opts.NoSymmetry:
		sets += ", one per class of sets equal up to renaming the lieutenants (sound: both algorithms treat lieutenants alike and the adversary is closed under renaming)"
	}
	adv = append(adv, sets, "a loyal commander with each order of the domain {"+dom+"}")
	switch cfg.Algorithm {
	case OM:
		adv = append(adv, "every message a traitor sends a loyal general, on every relay path and in every round: any order of {"+dom+"}, or nothing")
		not = append(not, "orders outside {"+dom+"} (add them with the domain)",
			"messages between traitors (they change nothing a loyal general sees)",
			"a second message on the same relay path (refused as a duplicate) and malformed or misaddressed messages (refused by their shape, tested elsewhere)",
			"timing: every message arrives in its round (late delivery is tested by the timed runtime tests)")
	case SM:
		adv = append(adv, "traitors pool their keys; in every round each loyal lieutenant receives any subset of the orders the traitors can put in a valid chain of that round's length not naming it (any chain a traitor received, extended by one or more traitors, and, when the commander is a traitor, its order of any value extended by traitors), so a traitorous commander sends each lieutenant nothing, one order or several signed orders")
		not = append(not, "orders outside {"+dom+"} (add them with the domain)",
			"which of several valid chains carries an order to a receiver (one is sent: the receiver relays to everyone not on the chain, and the loyal generals on any chain already hold its order)",
			"forged signatures, replays and malformed chains (refused before they count: tested by the strategy and transport tests)",
			"timing: every message arrives in its round (late delivery is tested by the timed runtime tests)")
	}
	return adv, not
}

// exhauster runs the in-memory rounds of one search with the traitors
// played by the enumeration.
type exhauster struct {
	cfg    Config
	domain []Order
	priv   []ed25519.PrivateKey
	pub    []ed25519.PublicKey
	states map[uint64]struct{}
	memo   map[string]bool   // verifications, shared by every run
	signs  map[string][]byte // signatures, shared by every run (ed25519 is deterministic)
	sent   []traitorSend     // what the traitors sent in the current run (the first maxSentKept)
	// sentMore counts what they sent beyond those.
	sentMore int
}

type traitorSend struct {
	msg    Message
	silent bool
}

// chainOf is a valid chain a traitor can extend.
type chainOf struct {
	order Order
	path  []ID
	sigs  [][]byte
}

func (x *exhauster) sign(id ID, b []byte) []byte {
	if s, ok := x.signs[string(b)]; ok {
		return s
	}
	s := ed25519.Sign(x.priv[id], b)
	x.signs[string(b)] = s
	return s
}

// extend returns c with id's link appended and signed.
func (x *exhauster) extend(c chainOf, id ID, run RunID) chainOf {
	np := append(slices.Clone(c.path), id)
	sigs := append(slices.Clone(c.sigs), nil)
	t := len(np) - 1
	if !finalLink(t, x.cfg.MaxTraitors) {
		var prev []byte
		if t > 0 {
			prev = c.sigs[t-1]
		}
		sigs[t] = x.sign(id, linkBytes(nil, run, x.cfg.Seq, c.order, np, prev))
	}
	return chainOf{order: c.order, path: np, sigs: sigs}
}

// run makes one run with traitor[] played by ch. It returns the result
// and the key of the loyal generals' final state; x.sent holds what the
// traitors sent.
// errRunCut is returned by run when ctx ended during the run.
var errRunCut = errors.New("byzantine: exhaustive run cut short")

func (x *exhauster) run(ctx context.Context, traitor []bool, order Order, ch *chooser) (*Result, uint64, error) {
	cfg := x.cfg
	cfg.Order = order
	n, m := cfg.Generals, cfg.MaxTraitors
	run := cfg.Run()
	gens := make([]*General, n)
	for i := range n {
		if traitor[i] {
			continue
		}
		var keys Keyring
		if cfg.Algorithm == SM {
			keys = Keyring{Private: x.priv[i], Public: x.pub}
		}
		g, err := NewGeneral(cfg, ID(i), keys)
		if err != nil {
			return nil, 0, err
		}
		g.memo, g.signMemo = x.memo, x.signs
		gens[i] = g
	}
	x.sent = x.sent[:0]
	var known []chainOf // SM: every chain the traitors received // SM: chains received by each traitor last round
	x.sentMore = 0
	// ctx is checked every few thousand messages: one run of a large OM
	// carries millions, and the budget must hold inside a run too.
	var count int
	cut := false
	for r := 0; r <= m; r++ {
		// Advance makes room for the round's relay tree: for OM(5) with
		// 22 generals about 30 MB per general, so the budget is checked
		// before each one, not only every few thousand messages.
		for _, g := range gens {
			if ctx.Err() != nil {
				return nil, 0, errRunCut
			}
			if g != nil {
				g.Advance(r)
			}
		}
		for _, g := range gens {
			if g == nil {
				continue
			}
			if cut {
				break // the rest of the round is not made
			}
			g.stream(func(msg Message) {
				if cut {
					return
				}
				if count++; count%4096 == 0 && ctx.Err() != nil {
					cut = true
					return
				}
				if traitor[msg.To] {
					if cfg.Algorithm == SM {
						known = append(known, chainOf{order: msg.Order, path: msg.Path, sigs: msg.Sigs})
					}
					return
				}
				gens[msg.To].Receive(msg)
			})
		}
		if cut || ctx.Err() != nil {
			return nil, 0, errRunCut
		}
		deliver := func(msg Message, silent bool) {
			if count++; count%4096 == 0 && ctx.Err() != nil {
				cut = true
			}
			if cut {
				return
			}
			if len(x.sent) < maxSentKept {
				x.sent = append(x.sent, traitorSend{msg, silent})
			} else {
				x.sentMore++
			}
			if !silent {
				gens[msg.To].Receive(msg)
			}
		}
		if cfg.Algorithm == OM {
			x.omTraitors(traitor, r, run, ch, deliver)
		} else {
			x.smTraitors(traitor, r, run, known, ch, deliver)
		}
		if cut {
			return nil, 0, errRunCut
		}
	}
	res := &Result{Config: cfg, Generals: make([]GeneralResult, n)}
	h := fnv.New64a()
	var b []byte
	for i := range n {
		if gens[i] == nil {
			res.Generals[i] = GeneralResult{ID: ID(i), Strategy: Custom}
			continue
		}
		g := gens[i]
		d := g.Decide()
		res.Generals[i] = GeneralResult{ID: ID(i), Loyal: true, Decision: d}
		b = append(append(b[:0], byte(i), 0), d...)
		if cfg.Algorithm == SM {
			v := slices.Clone(g.sm.v)
			slices.Sort(v)
			for _, o := range v {
				b = append(append(b, 0), o...)
			}
		} else {
			for _, lv := range g.om.levels {
				for _, o := range lv {
					b = append(append(b, 1), o...)
				}
			}
		}
		h.Write(b)
	}
	return res, h.Sum64(), nil
}

// sentText formats what the traitors sent in the last run.
func (x *exhauster) sentText() []string {
	out := make([]string, len(x.sent))
	for i, s := range x.sent {
		what := s.msg.Chain()
		if s.silent {
			what = "nothing (" + pathString(s.msg.Path) + ")"
		}
		out[i] = fmt.Sprintf("r%d: %d -> %d %s", s.msg.Round, s.msg.From, s.msg.To, what)
	}
	if x.sentMore > 0 {
		out = append(out, fmt.Sprintf("... and %d more", x.sentMore))
	}
	return out
}

// omTraitors plays round r of the OM traitors: every message each would
// send a loyal general (every relay path not naming it) carries any order
// of the domain or is not sent.
func (x *exhauster) omTraitors(traitor []bool, r int, run RunID, ch *chooser, deliver func(Message, bool)) {
	cfg := x.cfg
	n := cfg.Generals
	for t := range n {
		if !traitor[t] || (t == 0) != (r == 0) {
			continue
		}
		used := make([]bool, n)
		used[t] = true
		path := []ID{0}
		var rec func()
		rec = func() {
			if len(path) == r {
				np := append(slices.Clone(path), ID(t))
				for q := 1; q < n; q++ {
					if used[q] || traitor[q] {
						continue
					}
					msg := Message{From: ID(t), To: ID(q), Round: r, Seq: cfg.Seq, Run: run, Path: np}
					x.omChoose(msg, ch, deliver)
				}
				return
			}
			for j := 1; j < n; j++ {
				if used[j] {
					continue
				}
				used[j] = true
				path = append(path, ID(j))
				rec()
				path = path[:len(path)-1]
				used[j] = false
			}
		}
		if r > 0 {
			rec()
			continue
		}
		for q := 1; q < n; q++ {
			if !traitor[q] {
				x.omChoose(Message{From: 0, To: ID(q), Round: 0, Seq: cfg.Seq, Run: run, Path: path}, ch, deliver)
			}
		}
	}
}

// omChoose sends msg with any order of the domain, or not at all.
func (x *exhauster) omChoose(msg Message, ch *chooser, deliver func(Message, bool)) {
	c := ch.choose(len(x.domain) + 1)
	if c == 0 {
		deliver(msg, true)
		return
	}
	msg.Order = x.domain[c-1]
	deliver(msg, false)
}

// smTraitors plays round r of the SM coalition: each loyal lieutenant gets
// any subset of the orders the traitors hold a valid chain for. A chain of
// round r has r+1 links and ends with a traitor: a chain some traitor
// received (in any earlier round) extended by one or more distinct
// traitors, or, when the commander is a traitor, its signed order of any
// value of the domain extended by r traitors.
func (x *exhauster) smTraitors(traitor []bool, r int, run RunID, known []chainOf, ch *chooser, deliver func(Message, bool)) {
	cfg := x.cfg
	n := cfg.Generals
	var tl []ID // the traitorous lieutenants
	for t := 1; t < n; t++ {
		if traitor[t] {
			tl = append(tl, ID(t))
		}
	}
	bases := known
	if traitor[0] {
		for _, o := range x.domain {
			c := chainOf{order: o, path: []ID{0}, sigs: [][]byte{nil}}
			c.sigs[0] = x.sign(0, linkBytes(nil, run, cfg.Seq, o, c.path, nil))
			bases = append(bases, c)
		}
	}
	for q := 1; q < n; q++ {
		if traitor[q] {
			continue
		}
		// For each order, the first valid chain for q.
		var avail []chainOf
		for _, b := range bases {
			if slices.ContainsFunc(avail, func(c chainOf) bool { return c.order == b.order }) || slices.Contains(b.path, ID(q)) {
				continue
			}
			need := r + 1 - len(b.path)
			if need < 0 || (need == 0 && !traitor[b.path[len(b.path)-1]]) {
				continue
			}
			c, ok := b, true
			for range need {
				next := slices.IndexFunc(tl, func(t ID) bool { return !slices.Contains(c.path, t) })
				if next < 0 {
					ok = false
					break
				}
				c = x.extend(c, tl[next], run)
			}
			if ok {
				avail = append(avail, c)
			}
		}
		slices.SortFunc(avail, func(a, b chainOf) int { return compareOrders(a.order, b.order) })
		for _, c := range avail {
			from := c.path[len(c.path)-1]
			msg := Message{From: from, To: ID(q), Round: r, Seq: cfg.Seq, Run: run, Order: c.order, Path: c.path, Sigs: c.sigs}
			deliver(msg, ch.choose(2) == 1)
		}
	}
}
