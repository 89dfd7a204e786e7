package byzantine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// InteractiveConfig describes one run of interactive consistency (Pease,
// Shostak and Lamport, 1980): every general has a private value, and every
// loyal general decides a vector of n values such that
//
//   - IC1: all loyal generals decide the same vector, and
//   - IC2: the entry of every loyal general is its own value.
//
// It is built from n instances of the one-commander algorithm of Config,
// run side by side in the same rounds: in instance i general i is the
// commander and sends Values[i]. An entry i of a decided vector is the
// decision of instance i, so Retreat (the default of a missing message,
// B6) stands for "no value" as well as for the value "retreat".
type InteractiveConfig struct {
	// Config is the run shared by every instance: Algorithm, Generals,
	// MaxTraitors, Majority, RoundTimeout, Seed, Seq, RunID, AllowUnsafe,
	// Faulty (a traitor lies in every instance, its own included),
	// Crashes, in-memory Faults, Trace and Explain, in the generals' own
	// ids. Config.Order is not used (each commander sends its own value).
	// A general listed in Explain is explained in every instance
	// (InteractiveResult.Explain).
	Config Config `json:"config"`
	// Values holds general i's private value at index i; len(Values) must
	// be Config.Generals.
	Values []Order `json:"values"`
	// Equivocate, when set for a traitor, is the value it sends to each
	// general (by that general's id) as the commander of its own instance,
	// instead of its Strategy there; in the other instances it still
	// follows its Strategy. In process only.
	Equivocate map[ID]func(to ID) Order `json:"-"`
}

// InstanceID maps between the generals' own ids and the ids of instance
// i, in which general i is the commander (id 0) and general 0 takes id i;
// every other general keeps its id. The mapping is its own inverse.
func InstanceID(i, id ID) ID {
	switch id {
	case 0:
		return i
	case i:
		return 0
	}
	return id
}

// instanceRun derives the run id of instance i from the run id of the
// whole interactive run, so that a message or signature of one instance is
// stale in every other (a traitor cannot move a commander's signed value
// from its instance into another).
func instanceRun(base RunID, i ID) RunID {
	b := append([]byte("dlm/byzantine/interactive/v1"), base[:]...)
	b = append(b, byte(i>>8), byte(i))
	return NewRunID(b, time.Time{}, 0)
}

// Validate checks the run and says why it is refused. Errors wrap
// ErrInvalidConfig (and ErrUnsafe for sizes outside the bounds), as
// Config.Validate's do.
func (c InteractiveConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	cfg := c.Config
	if len(c.Values) != cfg.Generals {
		return bad("interactive consistency: %d values for %d generals: want one value per general", len(c.Values), cfg.Generals)
	}
	for i, v := range c.Values {
		if !v.valid() {
			return bad("value of general %d %q: want 1 to %d bytes", i, v, MaxOrderLen)
		}
	}
	if k := len(slices.Compact(slices.Sorted(slices.Values(cfg.Explain)))); k > 0 && cfg.Algorithm == OM && cfg.Generals > 0 {
		if total := k * cfg.Generals * explainNodes(cfg.Generals, cfg.MaxTraitors); total > MaxExplainNodes {
			return fmt.Errorf("%w: %w: explaining %d generals in each of %d instances of OM(%d) builds %d decision-tree nodes, more than %d; explain fewer generals or a smaller run",
				ErrInvalidConfig, ErrTooLarge, k, cfg.Generals, cfg.MaxTraitors, total, MaxExplainNodes)
		}
	}
	for id := range c.Equivocate {
		if cfg.strategyOf(id) == "" {
			return bad("general %d equivocates but is not listed among the traitors", id)
		}
		if c.Equivocate[id] == nil {
			return bad("general %d: nil Equivocate function", id)
		}
	}
	for _, t := range cfg.Faulty {
		if t.Strategy == Custom {
			return bad("traitor %d: a custom traitor cannot serve every instance; use Equivocate or run one instance with Run", t.ID)
		}
	}
	if cfg.Trace {
		// n instances, each held to the trace bound of one run.
		cfg.Trace = false
	}
	cfg.Order = c.Values[0]
	if err := cfg.Validate(); err != nil {
		return err
	}
	if n, m := cfg.Generals, cfg.MaxTraitors; cfg.Algorithm == OM && OMMessages(n, m) > MaxOMMessages/n {
		// n instances, all held in memory together: the bound is on them
		// all.
		return fmt.Errorf("%w: %w: interactive consistency runs %d instances of OM(%d) with %d generals, %d messages each, more than %d in all",
			ErrInvalidConfig, ErrTooLarge, n, m, n, OMMessages(n, m), MaxOMMessages)
	}
	return nil
}

// Instance returns the Config of instance i, in the instance's own ids
// (see InstanceID): general i is its commander, with Values[i] as its
// order, and the run id is derived from the whole run's.
func (c InteractiveConfig) Instance(i ID) Config {
	cfg := c.Config
	cfg.Order = c.Values[i]
	cfg.RunID = instanceRun(c.Config.Run(), i)
	cfg.Faulty = nil
	for _, t := range c.Config.Faulty {
		t.ID = InstanceID(i, t.ID)
		cfg.Faulty = append(cfg.Faulty, t)
	}
	if lie := c.Equivocate[i]; lie != nil {
		for k := range cfg.Faulty {
			if cfg.Faulty[k].ID == 0 {
				cfg.Faulty[k] = Traitor{ID: 0, Strategy: Custom, Func: equivocator(i, lie)}
			}
		}
	}
	cfg.Explain = nil
	for _, id := range c.Config.Explain {
		cfg.Explain = append(cfg.Explain, InstanceID(i, id))
	}
	cfg.Crashes = nil
	for _, cr := range c.Config.Crashes {
		cr.ID = InstanceID(i, cr.ID)
		cfg.Crashes = append(cfg.Crashes, cr)
	}
	if len(c.Config.Faults.Partition) > 0 {
		cfg.Faults.Partition = make([][]ID, len(c.Config.Faults.Partition))
		for k, grp := range c.Config.Faults.Partition {
			for _, id := range grp {
				cfg.Faults.Partition[k] = append(cfg.Faults.Partition[k], InstanceID(i, id))
			}
		}
	}
	if hook := c.Config.Faults.Hook; hook != nil {
		cfg.Faults.Hook = func(m Message) Fault { return hook(RelabelMessage(i, m)) }
	}
	return cfg
}

// RelabelMessage returns m of instance i with its sender, receiver and
// path in the generals' own ids (or back: the mapping is its own inverse).
// Signatures are kept: they were made over the instance's ids.
func RelabelMessage(i ID, m Message) Message {
	m.From, m.To = InstanceID(i, m.From), InstanceID(i, m.To)
	path := make([]ID, len(m.Path))
	for k, id := range m.Path {
		path[k] = InstanceID(i, id)
	}
	m.Path = path
	return m
}

// equivocator is the custom commander of a traitor's own instance: in
// round 0 it sends each general the value lie gives for it, signed with
// its own key; later it sends what it honestly would (nothing).
func equivocator(i ID, lie func(to ID) Order) TraitorFunc {
	return func(round int, honest []Message, s Signer) []Message {
		if round != 0 {
			return honest
		}
		out := make([]Message, 0, len(honest))
		for _, m := range honest {
			m.Order = lie(InstanceID(i, m.To))
			m.Sigs = nil
			if signed, err := s.Sign(m); err == nil {
				m = signed
			}
			out = append(out, m)
		}
		return out
	}
}

// instanceKeys returns the keyring of general id (own ids) in instance i:
// its own private key and the public keys in the instance's ids.
func instanceKeys(keys Keyring, i ID) Keyring {
	if keys.Public == nil {
		return keys
	}
	pub := slices.Clone(keys.Public)
	pub[0], pub[i] = keys.Public[i], keys.Public[0]
	return Keyring{Private: keys.Private, Public: pub}
}

// heardCommander reports whether the general received its commander's
// value directly and in time (for the commander itself: true).
func (g *General) heardCommander() bool {
	switch {
	case g.id == 0:
		return true
	case g.cfg.Algorithm == OM:
		return len(g.om.levels) > 0 && len(g.om.levels[0]) > 0 && g.om.levels[0][0] != ""
	default:
		return g.sm.commander
	}
}

// InteractiveResult is the outcome of an interactive-consistency run.
type InteractiveResult struct {
	// Config is the run's configuration.
	Config InteractiveConfig `json:"config"`
	// Instances holds the result of instance i at index i, in the
	// instance's own ids (see InstanceID): Instances[i].Generals[0] is
	// general i, its commander. Each instance's Verify checks B1 for it.
	Instances []*Result `json:"instances"`
	// Vectors holds, for each loyal general that did not crash, the vector
	// it decided: entry i is its decision in instance i (its own value at
	// its own index).
	Vectors map[ID][]Order `json:"vectors"`
	// Heard[g][p] is true when general g received general p's own value
	// directly from p, in time, in p's instance (Heard[g][g] is true); nil
	// for a general that crashed. Failure detectors propose it.
	Heard [][]bool `json:"heard,omitempty"`
	// Messages, Bytes, SignaturesMade and SignaturesVerified are the sums
	// over the instances.
	Messages           int   `json:"messages"`
	Bytes              int64 `json:"bytes"`
	SignaturesMade     int   `json:"signatures_made"`
	SignaturesVerified int   `json:"signatures_verified"`
	// Rejected counts refused messages by reason, over all instances.
	Rejected map[RejectReason]int `json:"rejected,omitempty"`
	// Rounds is the number of message rounds, m+1: the instances share them.
	Rounds int `json:"rounds"`
}

// LoyalMessages returns the number of messages an interactive run sends
// when every general is loyal: n times the count of one instance (B6 for
// OM, (n-1)^2 for SM with m >= 1).
func LoyalMessages(alg Algorithm, n, m int) int {
	one := OMMessages(n, m)
	if alg == SM {
		one = SMLoyalMessages(n, m)
	}
	if one > (1<<62)/max(n, 1) {
		return 1<<63 - 1
	}
	return n * one
}

// Sentinel errors of InteractiveResult.Verify.
var (
	// ErrVectorIC1 means loyal generals decided different vectors.
	ErrVectorIC1 = errors.New("byzantine: interactive consistency IC1 violated: loyal generals decided different vectors")
	// ErrVectorIC2 means a loyal general's entry is not its own value in
	// some loyal general's vector.
	ErrVectorIC2 = errors.New("byzantine: interactive consistency IC2 violated: a loyal general's entry is not its own value")
)

// EntryError is one entry of one loyal general's vector that breaks IC1
// or IC2.
type EntryError struct {
	// General is the loyal general whose vector holds the entry.
	General ID `json:"general"`
	// Entry is the index of the entry: the general whose value it is.
	Entry ID `json:"entry"`
	// Got is the entry; Want is the loyal owner's value (IC2) or what most
	// loyal generals decided (IC1).
	Got  Order `json:"got"`
	Want Order `json:"want"`
}

// VectorError details a violation of the vector conditions. errors.Is
// finds ErrVectorIC1 and ErrVectorIC2 in it.
type VectorError struct {
	// IC1 and IC2 are true when the condition holds.
	IC1, IC2 bool
	// Entries lists the offending entries, by general and entry.
	Entries []EntryError
}

// Error describes the violation.
func (e *VectorError) Error() string {
	var parts []string
	if !e.IC1 {
		parts = append(parts, ErrVectorIC1.Error())
	}
	if !e.IC2 {
		parts = append(parts, ErrVectorIC2.Error())
	}
	var es []string
	for _, x := range e.Entries {
		es = append(es, fmt.Sprintf("general %d holds %q for general %d, want %q", x.General, x.Got, x.Entry, x.Want))
	}
	return strings.Join(parts, "; ") + ": " + strings.Join(es, "; ")
}

// Unwrap returns the sentinels of the violated conditions.
func (e *VectorError) Unwrap() []error {
	var errs []error
	if !e.IC1 {
		errs = append(errs, ErrVectorIC1)
	}
	if !e.IC2 {
		errs = append(errs, ErrVectorIC2)
	}
	return errs
}

// Loyal returns the generals that are loyal and did not crash, in
// increasing order: those that decide a vector.
func (r *InteractiveResult) Loyal() []ID {
	ids := make([]ID, 0, len(r.Vectors))
	for id := range r.Vectors {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// loyalOwner reports whether general id is loyal and did not crash: IC2
// then binds its entry.
func (r *InteractiveResult) loyalOwner(id ID) bool {
	_, ok := r.Vectors[id]
	return ok
}

// IC1 reports whether all loyal generals decided the same vector.
func (r *InteractiveResult) IC1() bool { return r.vectorErrors(true) == nil }

// IC2 reports whether, in every loyal general's vector, the entry of every
// loyal general is that general's own value.
func (r *InteractiveResult) IC2() bool { return r.vectorErrors(false) == nil }

// vectorErrors returns the entries that break IC1 (ic1) or IC2.
func (r *InteractiveResult) vectorErrors(ic1 bool) []EntryError {
	var out []EntryError
	loyal := r.Loyal()
	n := r.Config.Config.Generals
	for e := range n {
		entry := ID(e)
		if !ic1 {
			if !r.loyalOwner(entry) {
				continue
			}
			want := r.Config.Values[entry]
			for _, g := range loyal {
				if got := r.Vectors[g][entry]; got != want {
					out = append(out, EntryError{General: g, Entry: entry, Got: got, Want: want})
				}
			}
			continue
		}
		counts := map[Order]int{}
		for _, g := range loyal {
			counts[r.Vectors[g][entry]]++
		}
		if len(counts) <= 1 {
			continue
		}
		var ref Order
		if r.loyalOwner(entry) {
			ref = r.Config.Values[entry] // IC2 says what it must be
		} else {
			for o, c := range counts {
				if c > counts[ref] || (c == counts[ref] && o < ref) {
					ref = o
				}
			}
		}
		for _, g := range loyal {
			if got := r.Vectors[g][entry]; got != ref {
				out = append(out, EntryError{General: g, Entry: entry, Got: got, Want: ref})
			}
		}
	}
	return out
}

// Verify checks the vector conditions IC1 and IC2 and returns nil when
// both hold, or a *VectorError naming every offending entry.
func (r *InteractiveResult) Verify() error {
	e1, e2 := r.vectorErrors(true), r.vectorErrors(false)
	if e1 == nil && e2 == nil {
		return nil
	}
	entries := e2
	for _, x := range e1 {
		if !slices.ContainsFunc(e2, func(y EntryError) bool { return y.General == x.General && y.Entry == x.Entry }) {
			entries = append(entries, x)
		}
	}
	slices.SortFunc(entries, func(a, b EntryError) int {
		if a.General != b.General {
			return int(a.General - b.General)
		}
		return int(a.Entry - b.Entry)
	})
	return &VectorError{IC1: e1 == nil, IC2: e2 == nil, Entries: entries}
}

// Explain returns how general g decided each entry of its vector: at
// index i its Explanation in instance i, with every path and chain in the
// generals' own ids (instance i's commander is general i, so its paths
// start with i). It is nil when g is not in Config.Explain; an entry is
// nil where g crashed. In instance g, g is the commander: its explanation
// holds only its decision, its own value.
func (r *InteractiveResult) Explain(g ID) []*Explanation {
	if !slices.Contains(r.Config.Config.Explain, g) {
		return nil
	}
	out := make([]*Explanation, len(r.Instances))
	for i, inst := range r.Instances {
		v := InstanceID(ID(i), g)
		if int(v) >= len(inst.Generals) {
			continue
		}
		out[i] = inst.Generals[v].Explanation.Relabel(func(id ID) ID { return InstanceID(ID(i), id) })
	}
	return out
}

// FaultyGenerals returns, in increasing order, every general the run
// counts as faulty in any instance, in the generals' own ids: traitors,
// crashed generals, and peers a loyal survivor saw fail over a real
// transport (see Result.FaultyGenerals).
func (r *InteractiveResult) FaultyGenerals() []ID {
	var ids []ID
	for i, inst := range r.Instances {
		for _, id := range inst.FaultyGenerals() {
			if own := InstanceID(ID(i), id); !slices.Contains(ids, own) {
				ids = append(ids, own)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// FaultReasons says, for each general that FaultyGenerals counts, why:
// a traitor and its strategy, a crash, or which loyal survivors saw it
// absent, gone, late, unreachable or refused over a real transport, and from which round (the
// earliest over the instances), in the generals' own ids.
func (r *InteractiveResult) FaultReasons() map[ID][]string {
	out := make(map[ID][]string)
	add := func(id ID, why string) {
		if !slices.Contains(out[id], why) {
			out[id] = append(out[id], why)
		}
	}
	type seen struct {
		by   ID
		kind PeerFaultKind
	}
	first := make(map[ID]map[seen]int)
	for i, inst := range r.Instances {
		for _, g := range inst.Generals {
			own := InstanceID(ID(i), g.ID)
			switch {
			case !g.Loyal:
				add(own, fmt.Sprintf("a traitor (%s)", g.Strategy))
			case g.Crashed:
				add(own, "crashed")
			}
			if !g.Loyal || g.Crashed {
				continue
			}
			for _, f := range g.Faults {
				peer := InstanceID(ID(i), f.ID)
				if first[peer] == nil {
					first[peer] = make(map[seen]int)
				}
				k := seen{own, f.Kind}
				if r0, ok := first[peer][k]; !ok || f.Round < r0 {
					first[peer][k] = f.Round
				}
			}
		}
	}
	for peer, by := range first {
		keys := slices.SortedFunc(maps.Keys(by), func(a, b seen) int {
			if a.by != b.by {
				return int(a.by - b.by)
			}
			return strings.Compare(string(a.kind), string(b.kind))
		})
		for _, k := range keys {
			add(peer, fmt.Sprintf("general %d saw it %s from round %d", k.by, k.kind, by[k]))
		}
	}
	return out
}

// TooManyFaults reports whether more than m generals were faulty: the run
// is then outside what the vector conditions are guaranteed for.
func (r *InteractiveResult) TooManyFaults() bool {
	return len(r.FaultyGenerals()) > r.Config.Config.MaxTraitors
}

// OutOfTime returns the loyal generals that did not keep the schedule in
// some instance (GeneralResult.Overran, real transports only): when it is
// not empty, the run's vectors prove nothing.
func (r *InteractiveResult) OutOfTime() []ID {
	var ids []ID
	for i, inst := range r.Instances {
		for _, id := range inst.OutOfTime() {
			own := InstanceID(ID(i), id)
			if !slices.Contains(ids, own) {
				ids = append(ids, own)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// RunInteractive executes ic over the in-memory transport: the n
// instances advance round by round together, each with its own transport
// and fault hooks, deterministic for a seed. It returns an error wrapping
// ErrInvalidConfig for a config Validate refuses, and one wrapping both
// ErrStopped and ctx.Err() when ctx ends first. Check the vectors with
// Verify.
func RunInteractive(ctx context.Context, ic InteractiveConfig) (*InteractiveResult, error) {
	if err := ic.Validate(); err != nil {
		return nil, err
	}
	n, m := ic.Config.Generals, ic.Config.MaxTraitors
	type instance struct {
		cfg  Config
		gens []*General
		net  *memNet
		res  *Result
	}
	insts := make([]*instance, n)
	memo := make(map[string]bool)
	var priv []Keyring
	if ic.Config.Algorithm == SM {
		pk, pub := DeriveKeys(ic.Config.Seed, n)
		priv = make([]Keyring, n)
		for i := range n {
			priv[i] = Keyring{Private: pk[i], Public: pub}
		}
	}
	for i := range n {
		cfg := ic.Instance(ID(i))
		in := &instance{cfg: cfg, net: newMemNet(cfg), res: &Result{Config: cfg}, gens: make([]*General, n)}
		for v := range n {
			var keys Keyring
			var opts []GeneralOption
			if priv != nil {
				keys = instanceKeys(priv[InstanceID(ID(i), ID(v))], ID(i))
				if cfg.strategyOf(ID(v)) == Replay {
					opts = append(opts, WithHistory(previousRun(cfg, priv[i].Private, instanceKeys(priv[0], ID(i)).Public)))
				}
			}
			g, err := NewGeneral(cfg, ID(v), keys, opts...)
			if err != nil {
				return nil, fmt.Errorf("instance %d: %w", i, err)
			}
			g.memo = memo
			in.gens[v] = g
		}
		insts[i] = in
	}
	stopped := ctxTicker(ctx)
	for r := 0; r <= m+1; r++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w in round %d: %w", ErrStopped, r, err)
		}
		for _, in := range insts {
			for v, g := range in.gens {
				if !crashedBy(in.cfg, ID(v), r) {
					g.Advance(r)
				}
			}
			for _, d := range in.net.due(r) {
				in.net.deliver(in.res, in.gens, r, d.msg, Delay)
			}
		}
		for _, in := range insts {
			for v, g := range in.gens {
				if !crashedBy(in.cfg, ID(v), r) {
					g.stream(func(msg Message) {
						if stopped() {
							g.halt()
							return
						}
						in.net.route(in.res, in.gens, r, msg)
					})
				}
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("%w in round %d: %w", ErrStopped, r, err)
				}
			}
		}
	}
	out := &InteractiveResult{Config: ic, Instances: make([]*Result, n), Heard: make([][]bool, n), Rounds: m + 1}
	for i, in := range insts {
		res := in.res
		res.Generals = make([]GeneralResult, n)
		for v, g := range in.gens {
			if crashedBy(in.cfg, ID(v), m+1) {
				res.Generals[v] = GeneralResult{ID: ID(v), Loyal: g.Loyal(), Strategy: g.strategy, Crashed: true, Stats: g.Stats()}
				continue
			}
			res.Generals[v] = GeneralResult{ID: ID(v), Loyal: g.Loyal(), Strategy: g.strategy, Decision: g.Decide(), Values: g.Values(), Stats: g.Stats()}
			if slices.Contains(in.cfg.Explain, ID(v)) {
				res.Generals[v].Explanation = g.Explain()
			}
			own := InstanceID(ID(i), ID(v))
			if out.Heard[own] == nil {
				out.Heard[own] = make([]bool, n)
			}
			out.Heard[own][i] = g.heardCommander()
		}
		res.Faults = in.net.counts
		res.finish()
		out.Instances[i] = res
	}
	out.assemble()
	return out, nil
}

// assemble fills the vectors and totals from the instances.
func (r *InteractiveResult) assemble() {
	n := len(r.Instances)
	r.Vectors = make(map[ID][]Order)
	for g := range n {
		id := ID(g)
		loyal := true
		for i, inst := range r.Instances {
			gr := inst.Generals[InstanceID(ID(i), id)]
			if !gr.Loyal || gr.Crashed {
				loyal = false
				break
			}
		}
		if !loyal {
			continue
		}
		vec := make([]Order, n)
		for i, inst := range r.Instances {
			vec[i] = inst.Generals[InstanceID(ID(i), id)].Decision
		}
		r.Vectors[id] = vec
	}
	for _, inst := range r.Instances {
		r.Messages += inst.Messages
		r.Bytes += inst.Bytes
		r.SignaturesMade += inst.SignaturesMade
		r.SignaturesVerified += inst.SignaturesVerified
		for why, c := range inst.Rejected {
			if r.Rejected == nil {
				r.Rejected = make(map[RejectReason]int)
			}
			r.Rejected[why] += c
		}
	}
}

// ExhaustInteractive searches every instance of every interactive run
// of ic's size exhaustively: it runs Exhaust on ic.Config with a domain of
// every private value of ic.Values and RETREAT (and any orders of
// opts.Domain), for every traitor set of at most m generals.
//
// That covers the interactive runs because instance i of an interactive
// run is, message for message, the one-commander run whose commander sends
// Values[i], with the traitor set renamed by InstanceID(i, ·) (any set of
// at most m, the commander's included): a loyal general's entry i depends
// only on the messages of instance i (those of another instance carry
// another run id and are refused), so whatever the traitors do across
// instances, correlated or not, is one behaviour in each instance. A crash
// is one such behaviour (nothing sent from some round on). The vectors
// break IC1 or IC2 exactly when some instance breaks IC1 or IC2 of one
// commander, for that instance's value and traitor set. So a complete
// search without violation shows that no behaviour of this finite
// adversary breaks the vector conditions of any interactive run with
// these values. The result's Adversary and NotEnumerated say so, and what
// the renaming of values adds.
func ExhaustInteractive(ctx context.Context, ic InteractiveConfig, opts ExhaustOptions) (*ExhaustResult, error) {
	cfg := ic.Config
	cfg.Faulty, cfg.Crashes, cfg.Explain, cfg.Trace = nil, nil, nil, false
	check := ic
	check.Config, check.Equivocate = cfg, nil
	if err := check.Validate(); err != nil {
		return nil, err
	}
	domain := slices.Clone(ic.Values)
	domain = append(domain, Retreat)
	domain = append(domain, opts.Domain...)
	var uniq []Order
	for _, o := range domain {
		if !slices.Contains(uniq, o) {
			uniq = append(uniq, o)
		}
	}
	opts.Domain = uniq
	res, err := Exhaust(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	values := make([]string, len(ic.Values))
	for i, v := range ic.Values {
		values[i] = fmt.Sprintf("%d=%s", i, v)
	}
	res.Adversary = append([]string{fmt.Sprintf(
		"every instance of every interactive run of %d generals with the private values %s: instance i is the one-commander run of commander i's value with the traitor set renamed (general i takes id 0), every set of at most %d searched here stands for it, and a loyal general's entry i depends on instance i's messages only, so whatever the traitors do across instances is one behaviour per instance; the vectors break IC1 or IC2 exactly when an instance does",
		cfg.Generals, strings.Join(values, " "), cfg.MaxTraitors)}, res.Adversary...)
	k := 0
	for _, o := range uniq {
		if o != Retreat {
			k++
		}
	}
	rename := fmt.Sprintf("values outside the domain: with majority %s, which compares values only for equality (RETREAT apart), renaming the values covers every behaviour whose messages in one instance carry at most %d distinct values besides RETREAT, the commander's included", cfg.Majority, k)
	if cfg.Algorithm == SM {
		rename = fmt.Sprintf("values outside the domain: choice(V) compares values only for equality, so renaming the values covers every behaviour whose messages in one instance carry at most %d distinct values besides RETREAT, the commander's included", k)
	} else if cfg.Majority == Median {
		rename = "values outside the domain: the median compares values by their order, so only values of the domain are covered"
	}
	res.NotEnumerated = append(res.NotEnumerated, rename)
	return res, nil
}
