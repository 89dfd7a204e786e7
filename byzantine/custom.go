package byzantine

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"slices"
)

// Custom is the strategy of a traitor written by the caller: Traitor.Func
// decides what it sends (see TraitorFunc). Custom traitors run in process
// (Run, or NewGeneral with RunGeneral); a function cannot travel to the
// processes of tcp.Launch.
const Custom Strategy = "custom"

// TraitorFunc is a custom traitor. In every round the general computes the
// messages it would send if it were loyal (for SM already signed, its own
// link included) and calls the function with them; the function returns
// the messages actually sent: altered, dropped, added or unchanged. It may
// keep state between rounds (the same function value serves the whole
// run). To change the order of an SM message and still sign it, it passes
// the message to Signer.Sign; it cannot sign for another general, so an
// altered relay is refused as forged by loyal receivers (A4). Messages must
// be addressed to other generals (To) and carry the run's Round, Seq and
// Run, as honest ones do; the transport stamps From.
type TraitorFunc func(round int, honest []Message, s Signer) []Message

// Signer signs SM chain links with one general's private key.
type Signer struct {
	g *General
}

// ID returns the general whose key signs.
func (s Signer) ID() ID { return s.g.id }

// Sign returns m with the signer's own link signed over m's order, path
// and earlier signatures: the last id of m.Path must be the signer (for a
// commander, Path is [0]). Earlier links are kept as they are. For OM,
// which has no signatures, and for the m-th link, which is never signed
// (B9), m is returned unchanged.
func (s Signer) Sign(m Message) (Message, error) {
	g := s.g
	t := len(m.Path) - 1
	if t < 0 || m.Path[t] != g.id {
		return m, fmt.Errorf("%w: general %d cannot sign a chain that does not end with it (%s)", ErrInvalidConfig, g.id, m.Chain())
	}
	if g.cfg.Algorithm != SM {
		return m, nil
	}
	sigs := make([][]byte, len(m.Path))
	copy(sigs, m.Sigs)
	if finalLink(t, g.m) {
		sigs[t] = nil
	} else {
		var prev []byte
		if t > 0 {
			prev = sigs[t-1]
		}
		b := linkBytes(nil, m.Run, m.Seq, m.Order, m.Path, prev)
		sigs[t] = ed25519.Sign(g.keys.Private, b)
		g.stats.SignaturesMade++
	}
	m.Sigs = sigs
	return m, nil
}

// customOutbox computes the honest messages of the round, hands them to
// the traitor's function and sends what it returns.
func (g *General) customOutbox(buf []Message) []Message {
	sink, strat, stats := g.sink, g.strategy, g.stats
	g.sink, g.strategy = nil, ""
	var honest []Message
	switch g.cfg.Algorithm {
	case OM:
		honest = g.omOutbox(nil, g.round)
	case SM:
		honest = g.smOutbox(nil, g.round)
	}
	made := g.stats.SignaturesMade
	g.sink, g.strategy = sink, strat
	g.stats = stats
	g.stats.SignaturesMade = made
	for _, m := range g.custom(g.round, honest, Signer{g: g}) {
		m.From = g.id
		buf = g.count(buf, m)
	}
	return buf
}

// ExhaustResult reports an exhaustive search over traitor behaviours.
type ExhaustResult struct {
	// Behaviours is the number of runs: every choice of the traitor (none,
	// or each general in turn), every loyal order, and every behaviour of
	// the traitor (each message it would send replaced by any value of the
	// domain, or not sent).
	Behaviours int `json:"behaviours"`
	// Violations is how many of them broke IC1 or IC2.
	Violations int `json:"violations"`
	// Counterexample is the first violating run, nil when none.
	Counterexample *Counterexample `json:"counterexample,omitempty"`
}

// Counterexample is one traitor behaviour that breaks IC1 or IC2.
type Counterexample struct {
	// Traitor is the traitor's id.
	Traitor ID `json:"traitor"`
	// Order is the commander's order of the run.
	Order Order `json:"order"`
	// Sent lists what the traitor sent, as "to <- chain", or "to <- nothing".
	Sent []string `json:"sent"`
	// Decisions are the loyal lieutenants' decisions.
	Decisions map[ID]Order `json:"decisions"`
	// Err is the verdict (wraps ErrIC1 and/or ErrIC2).
	Err string `json:"error"`
}

// MaxExhaustBehaviours bounds an exhaustive search.
const MaxExhaustBehaviours = 1_000_000

// Exhaust runs cfg (its Algorithm, Generals, MaxTraitors, Majority and
// Seed; Order and Faulty are replaced) with no traitor and then with each
// general in turn as the one traitor, for each order of domain given by a
// loyal commander, and with every behaviour of the traitor: each message
// it would send replaced by any order of domain, or not sent (B3's search,
// made exhaustive). It counts the runs and the IC1/IC2 violations and
// keeps the first counterexample. Unsafe sizes (OM with n < 3m+1) are
// searched too: that is where counterexamples are.
func Exhaust(ctx context.Context, cfg Config, domain []Order) (*ExhaustResult, error) {
	if len(domain) == 0 {
		domain = []Order{Attack, Retreat}
	}
	cfg.AllowUnsafe = true
	cfg.Faulty, cfg.Crashes, cfg.Trace, cfg.Explain = nil, nil, false, nil
	cfg.Faults = Faults{}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	out := &ExhaustResult{}
	choices := len(domain) + 1
	for t := -1; t < cfg.Generals; t++ {
		for _, order := range domain {
			c := cfg
			c.Order = order
			k := 0
			if t >= 0 {
				// A dry run counts the messages the traitor would send.
				c.Faulty = []Traitor{{ID: ID(t), Strategy: Custom, Func: func(_ int, honest []Message, _ Signer) []Message {
					k += len(honest)
					return honest
				}}}
				if _, err := Run(ctx, c); err != nil {
					return nil, err
				}
			}
			total := 1
			for range k {
				total *= choices
				if out.Behaviours+total > MaxExhaustBehaviours {
					return nil, fmt.Errorf("%w: %w: more than %d behaviours to enumerate", ErrInvalidConfig, ErrTooLarge, MaxExhaustBehaviours)
				}
			}
			for b := range total {
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("%w: %w", ErrStopped, err)
				}
				var sent []string
				if t >= 0 {
					digit := b
					c.Faulty = []Traitor{{ID: ID(t), Strategy: Custom, Func: func(_ int, honest []Message, s Signer) []Message {
						var outMsgs []Message
						for _, m := range honest {
							ch := digit % choices
							digit /= choices
							if ch == 0 {
								sent = append(sent, fmt.Sprintf("%d <- nothing", m.To))
								continue
							}
							m.Order = domain[ch-1]
							if signed, err := s.Sign(m); err == nil {
								m = signed
							}
							sent = append(sent, fmt.Sprintf("%d <- %s", m.To, m.Chain()))
							outMsgs = append(outMsgs, m)
						}
						return outMsgs
					}}}
				}
				res, err := Run(ctx, c)
				if err != nil {
					return nil, err
				}
				out.Behaviours++
				if verr := res.Verify(); verr != nil {
					out.Violations++
					if out.Counterexample == nil {
						out.Counterexample = &Counterexample{Traitor: ID(t), Order: order, Sent: slices.Clone(sent), Decisions: res.Decisions(), Err: verr.Error()}
					}
				}
			}
		}
	}
	return out, nil
}
