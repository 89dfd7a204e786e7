package byzantine

import (
	"crypto/ed25519"
	"fmt"
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
