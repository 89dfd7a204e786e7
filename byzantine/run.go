package byzantine

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Run executes cfg over the in-memory transport and returns the outcome.
// The transport is synchronous and deterministic for a seed: round r ends
// when every message sent in round r was delivered (A3 holds exactly: a
// missing message is known missing at the end of its round), after the
// fault hooks of cfg.Faults were applied. Run returns an error wrapping
// ErrInvalidConfig for a config Validate refuses, and one wrapping both
// ErrStopped and ctx.Err() when ctx ends first.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, m := cfg.Generals, cfg.MaxTraitors
	gens, err := newGenerals(cfg)
	if err != nil {
		return nil, err
	}
	net := newMemNet(cfg)
	res := &Result{Config: cfg}
	stopped := ctxTicker(ctx)
	for r := 0; r <= m+1; r++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w in round %d: %w", ErrStopped, r, err)
		}
		for i, g := range gens {
			if !crashedBy(cfg, ID(i), r) {
				g.Advance(r)
			}
		}
		for _, d := range net.due(r) {
			net.deliver(res, gens, r, d.msg, Delay)
		}
		for i, g := range gens {
			if !crashedBy(cfg, ID(i), r) {
				g.stream(func(msg Message) {
					if stopped() {
						g.halt()
						return
					}
					net.route(res, gens, r, msg)
				})
			}
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%w in round %d: %w", ErrStopped, r, err)
			}
		}
	}
	res.Generals = make([]GeneralResult, n)
	for i, g := range gens {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w deciding: %w", ErrStopped, err)
		}
		if crashedBy(cfg, ID(i), m+1) {
			res.Generals[i] = GeneralResult{ID: ID(i), Loyal: g.Loyal(), Strategy: g.strategy, Crashed: true, Stats: g.Stats()}
			continue
		}
		res.Generals[i] = GeneralResult{
			ID:       ID(i),
			Loyal:    g.Loyal(),
			Strategy: g.strategy,
			Decision: g.Decide(),
			Values:   g.Values(),
			Stats:    g.Stats(),
		}
		if slices.Contains(cfg.Explain, ID(i)) {
			res.Generals[i].Explanation = g.Explain()
		}
	}
	if cfg.Trace {
		// A3 made visible: what each loyal lieutenant never received.
		missing := false
		for i, g := range gens {
			if crashedBy(cfg, ID(i), m+1) || !g.Loyal() {
				continue
			}
			for _, msg := range g.Missing() {
				res.Trace = append(res.Trace, TraceEvent{Round: msg.Round, Message: msg, Fault: Missing})
				missing = true
			}
		}
		if missing {
			sortTrace(res.Trace)
		}
	}
	res.Faults = net.counts
	res.finish()
	return res, nil
}

// crashedBy reports whether general id has crashed by round r.
func crashedBy(cfg Config, id ID, r int) bool {
	c := cfg.CrashRound(id)
	return c >= 0 && c <= r
}

// newGenerals builds the n generals of an in-memory run, with keys derived
// from the seed.
func newGenerals(cfg Config) ([]*General, error) {
	n := cfg.Generals
	var priv []ed25519.PrivateKey
	var pub []ed25519.PublicKey
	var history []Message
	if cfg.Algorithm == SM {
		priv, pub = DeriveKeys(cfg.Seed, n)
		for _, t := range cfg.Faulty {
			if t.Strategy == Replay && t.ID != 0 {
				history = previousRun(cfg, priv[0], pub)
				break
			}
		}
	}
	gens := make([]*General, n)
	memo := make(map[string]bool)
	for i := range n {
		var keys Keyring
		if priv != nil {
			keys = Keyring{Private: priv[i], Public: pub}
		}
		g, err := NewGeneral(cfg, ID(i), keys, WithHistory(history))
		if err != nil {
			return nil, err
		}
		g.memo = memo
		gens[i] = g
	}
	return gens, nil
}

// previousRun is what a Replay traitor recorded of the run before this
// one: the commander's signed inverse order with sequence number Seq-1.
func previousRun(cfg Config, commander ed25519.PrivateKey, pub []ed25519.PublicKey) []Message {
	old := cfg
	old.Seq = cfg.Seq - 1
	old.RunID = RunID{} // derived from the old sequence number
	old.Order = Flip(cfg.Order)
	old.Faulty = nil
	g, err := NewGeneral(old, 0, Keyring{Private: commander, Public: pub})
	if err != nil {
		return nil
	}
	g.Advance(0)
	out := g.Outbox(nil)
	if len(out) == 0 {
		return nil
	}
	return out[:1]
}

type delayed struct {
	at  int
	msg Message
}

// memNet is the in-memory transport: it applies the fault hooks with its
// own seeded source and delivers in a fixed order.
type memNet struct {
	faults  Faults
	rng     *rand.Rand
	group   map[ID]int
	pending []delayed
	counts  map[string]int
	trace   bool
	cfg     Config
}

func newMemNet(cfg Config) *memNet {
	net := &memNet{
		faults: cfg.Faults,
		rng:    rand.New(rand.NewPCG(uint64(cfg.Seed), 0xfa17)),
		trace:  cfg.Trace,
		cfg:    cfg,
	}
	if len(cfg.Faults.Partition) > 0 {
		net.group = make(map[ID]int)
		for gi, grp := range cfg.Faults.Partition {
			for _, id := range grp {
				net.group[id] = gi + 1
			}
		}
	}
	return net
}

func (net *memNet) count(f Fault) {
	if net.counts == nil {
		net.counts = make(map[string]int)
	}
	net.counts[f.String()]++
}

// due returns the delayed messages to deliver in round r.
func (net *memNet) due(r int) []delayed {
	var now, later []delayed
	for _, d := range net.pending {
		if d.at <= r {
			now = append(now, d)
		} else {
			later = append(later, d)
		}
	}
	net.pending = later
	return now
}

func (net *memNet) decide(msg Message) Fault {
	f := net.faults
	if net.group != nil {
		a, b := net.group[msg.From], net.group[msg.To]
		if a != 0 && b != 0 && a != b {
			return Drop
		}
	}
	if f.Hook != nil {
		return f.Hook(msg)
	}
	if f.Drop == 0 && f.Duplicate == 0 && f.Corrupt == 0 && f.Delay == 0 {
		return Deliver
	}
	x := net.rng.Float64()
	for _, c := range []struct {
		p float64
		f Fault
	}{{f.Drop, Drop}, {f.Duplicate, Duplicate}, {f.Corrupt, Corrupt}, {f.Delay, Delay}} {
		if x < c.p {
			return c.f
		}
		x -= c.p
	}
	return Deliver
}

func (net *memNet) route(res *Result, gens []*General, r int, msg Message) {
	if int(msg.To) < 0 || int(msg.To) >= len(gens) {
		return
	}
	f := Deliver
	if net.faults.active() {
		f = net.decide(msg)
	}
	switch f {
	case Drop:
		net.count(Drop)
		if net.trace {
			res.Trace = append(res.Trace, TraceEvent{Round: r, Message: msg, Fault: Drop})
		}
		return
	case Delay:
		net.count(Delay)
		net.pending = append(net.pending, delayed{at: r + 1, msg: msg})
		return
	case Duplicate:
		net.count(Duplicate)
		net.deliver(res, gens, r, msg, Deliver)
	case Corrupt:
		net.count(Corrupt)
		msg.Order = Flip(msg.Order)
	}
	net.deliver(res, gens, r, msg, f)
}

func (net *memNet) deliver(res *Result, gens []*General, r int, msg Message, f Fault) {
	if crashedBy(net.cfg, msg.To, r) {
		return // a crashed general receives nothing
	}
	why := gens[msg.To].Receive(msg)
	if net.trace {
		res.Trace = append(res.Trace, TraceEvent{Round: r, Message: msg, Fault: f, Rejected: why})
	}
}

// tickEvery is how many messages a run makes between two looks at its
// context: a few microseconds of work, so that a cancelled run of millions
// of messages a round stops at once, for a look that costs next to nothing.
const tickEvery = 1 << 12

// ctxTicker returns a function to call once per message: it reports
// whether ctx has ended, looking at it every tickEvery calls, and keeps
// saying so once it has.
func ctxTicker(ctx context.Context) func() bool {
	k, done := 0, false
	return func() bool {
		if done {
			return true
		}
		k++
		if k%tickEvery == 0 {
			done = ctx.Err() != nil
		}
		return done
	}
}

// StoppedError is the error of a run of several generals (or of one
// general's several instances) that ctx stopped: ErrStopped and
// ctx.Err(), said once for all of them (who names them, as "general 3",
// or is empty), then every distinct error of errs that is not the stop
// itself (errs that wrap ErrStopped or ctx.Err() are what the stop did
// to each of them). A stop of n generals reads as one line, not n.
func StoppedError(ctx context.Context, who string, errs ...error) error {
	head := fmt.Errorf("%w: %w", ErrStopped, ctx.Err())
	if who != "" {
		head = fmt.Errorf("%w: %s: %w", ErrStopped, who, ctx.Err())
	}
	out := []error{head}
	var seen []string
	for _, err := range errs {
		if err == nil || errors.Is(err, ErrStopped) || errors.Is(err, ctx.Err()) {
			continue
		}
		if s := err.Error(); !slices.Contains(seen, s) {
			seen = append(seen, s)
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}
