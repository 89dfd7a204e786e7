package byzantine

import (
	"crypto/ed25519"
	"slices"
	"time"
)

// signer signs one relayed chain, once per distinct order (a two-faced
// traitor sends two), and reuses the signatures for the whole fan-out.
type signer struct {
	path   []ID
	prefix [][]byte // signatures of the links before this general's
	cache  []signed
}

type signed struct {
	order Order
	sigs  [][]byte
}

func (s *signer) sigsFor(g *General, o Order) [][]byte {
	for _, c := range s.cache {
		if c.order == o {
			return c.sigs
		}
	}
	t := len(s.path) - 1
	sigs := make([][]byte, len(s.path))
	copy(sigs, s.prefix)
	if !finalLink(t, g.m) {
		var prev []byte
		if t > 0 {
			prev = s.prefix[t-1]
		}
		g.sm.buf = linkBytes(g.sm.buf[:0], g.run, g.cfg.Seq, o, s.path, prev)
		if sig, ok := g.signMemo[string(g.sm.buf)]; ok {
			sigs[t] = sig
		} else {
			sigs[t] = ed25519.Sign(g.keys.Private, g.sm.buf)
			if g.signMemo != nil {
				g.signMemo[string(g.sm.buf)] = sigs[t]
			}
		}
		g.stats.SignaturesMade++
	}
	s.cache = append(s.cache, signed{o, sigs})
	return sigs
}

// ---- SM(m), B9 ----

// MaxValues is how many distinct orders an SM lieutenant keeps in V and
// relays: two. choice(V) is the single order when V holds one and RETREAT
// when it holds two or more, so two are all a general needs to decide, and
// all it needs to pass on for every loyal general to decide alike: a loyal
// general that keeps an order relays it, so every other loyal general ends
// with that order or with two orders already (the argument of B9 with the
// set cut at two). Bounding V bounds what any traitor can make a loyal
// general verify, sign and send, whatever it sends.
const MaxValues = 2

// senderCap is how many SM messages a loyal general sends to any one
// other general in a whole run: the commander one order, a lieutenant one
// relay of each of the at most MaxValues orders it keeps.
func senderCap(from ID) int {
	if from == 0 {
		return 1
	}
	return MaxValues
}

// wouldCount reports whether m, refused as late, would have changed what
// this general holds had it come in time; RunGeneral uses it to tell a
// general that fell behind the schedule from a peer's useless traffic.
func (g *General) wouldCount(m Message) bool {
	if len(m.Path) == 0 || len(m.Path) > g.m+1 || m.Path[0] != 0 || m.Path[len(m.Path)-1] != m.From {
		return false
	}
	switch g.cfg.Algorithm {
	case SM:
		k := len(m.Path) - 1
		known := slices.Contains(g.sm.v, m.Order)
		return !known && len(g.sm.v) < MaxValues && !(k == 0 && g.sm.commander) &&
			int(m.From) < len(g.sm.from) && g.sm.from[m.From] < senderCap(m.From)
	default:
		return g.omSlotEmpty(m)
	}
}

func (g *General) smOutbox(buf []Message, r int) []Message {
	if g.id == 0 {
		if r != 0 {
			return buf
		}
		// B9 step 1: the commander signs his value and sends v:0.
		s := &signer{path: []ID{0}}
		for q := 1; q < g.n; q++ {
			buf = g.send(buf, Message{From: 0, To: ID(q), Round: 0, Seq: g.cfg.Seq, Run: g.run, Order: g.cfg.Order, Path: s.path}, s)
		}
		if g.strategy == Replay && g.m > 0 {
			buf = g.replayOld(buf)
		}
		return buf
	}
	if r > g.m {
		return buf
	}
	// B9 step 2: relay every chain accepted in the previous round with a
	// new value, adding this general's signature, to the generals not on it.
	for _, job := range g.sm.ready {
		if g.halted {
			return buf
		}
		np := make([]ID, len(job.path)+1)
		copy(np, job.path)
		np[len(job.path)] = g.id
		s := &signer{path: np, prefix: job.sigs}
		for q := 1; q < g.n; q++ {
			if ID(q) == g.id || slices.Contains(job.path, ID(q)) {
				continue
			}
			buf = g.send(buf, Message{From: g.id, To: ID(q), Round: r, Seq: g.cfg.Seq, Run: g.run, Order: job.order, Path: np}, s)
		}
	}
	switch g.strategy {
	case Forge:
		if r == 1 {
			buf = g.fabricate(buf)
		}
	case Replay:
		if r == 1 {
			buf = g.replayOld(buf)
		}
		// Re-send what was received verbatim: the path does not end with
		// this general, so A2 exposes it.
		for _, got := range g.sm.resend {
			for q := 1; q < g.n; q++ {
				if ID(q) == g.id || ID(q) == got.From {
					continue
				}
				m := got
				m.From, m.To, m.Round = g.id, ID(q), r
				buf = g.count(buf, m)
			}
		}
		g.sm.resend = nil
	}
	return buf
}

// fabricate sends the chain flip(order):0:self with a made-up commander
// signature: A4(a) says it cannot pass.
func (g *General) fabricate(buf []Message) []Message {
	fake := make([]byte, ed25519.SignatureSize)
	for i := range fake {
		fake[i] = byte(g.rng.UintN(256))
	}
	s := &signer{path: []ID{0, g.id}, prefix: [][]byte{fake}}
	for q := 1; q < g.n; q++ {
		if ID(q) == g.id {
			continue
		}
		m := Message{From: g.id, To: ID(q), Round: 1, Seq: g.cfg.Seq, Run: g.run, Order: Flip(g.cfg.Order), Path: s.path}
		m.Sigs = s.sigsFor(g, m.Order)
		buf = g.count(buf, m)
	}
	return buf
}

// replayOld re-sends signed orders of an earlier run. A traitorous
// commander can make them itself; a lieutenant replays its history.
func (g *General) replayOld(buf []Message) []Message {
	old := g.history
	if g.id == 0 {
		var prev []Message
		s := &signer{path: []ID{0}}
		saved, savedRun := g.cfg.Seq, g.run
		g.cfg.Seq = saved - 1
		g.run = NewRunID(nil, time.Time{}, saved-1)
		sigs := s.sigsFor(g, Flip(g.cfg.Order))
		oldRun := g.run
		g.cfg.Seq, g.run = saved, savedRun
		prev = append(prev, Message{From: 0, Seq: saved - 1, Run: oldRun, Order: Flip(g.cfg.Order), Path: s.path, Sigs: sigs})
		old = prev
	}
	for _, h := range old {
		for q := 1; q < g.n; q++ {
			if ID(q) == g.id {
				continue
			}
			m := h
			m.From, m.To, m.Round = g.id, ID(q), g.round
			buf = g.count(buf, m)
		}
	}
	return buf
}

func (g *General) smReceive(m Message) RejectReason {
	if why := g.checkPath(m); why != "" {
		return why
	}
	k := len(m.Path) - 1
	if g.round > k {
		return RejectLate // B9: k signatures accepted only until T0 + k(mu+tau)
	}
	if len(m.Sigs) != len(m.Path) {
		return RejectMalformed
	}
	key := string(m.Order) + "\x00" + pathKey(m.Path)
	if _, dup := g.sm.seen[key]; dup {
		return RejectDuplicate
	}
	known := slices.Contains(g.sm.v, m.Order)
	switch {
	case k == 0 && g.sm.commander:
		// At most one order from the commander: a second one, however well
		// signed, costs nothing but this check.
		return RejectSecondOrder
	case !known && len(g.sm.v) >= MaxValues:
		// Two distinct orders already make choice(V) RETREAT; every loyal
		// general that holds fewer gets them from this one's relays.
		return RejectSurplus
	case g.sm.from[m.From] >= senderCap(m.From):
		// A loyal lieutenant relays each of its at most two orders once to
		// each general: a third message from it is treachery, and is not
		// worth a signature check.
		return RejectFlood
	}
	g.sm.from[m.From]++
	if !g.verifyChain(m) {
		return RejectForged // A4: forged or altered, never believed
	}
	g.sm.seen[key] = struct{}{}
	if g.strategy == Replay {
		g.sm.received = append(g.sm.received, m) // re-sent verbatim next round
	}
	if k == 0 {
		g.sm.commander = true
	}
	if known {
		return ""
	}
	// B9 step 2 (A)/(B): a new value joins V and is relayed if k < m.
	g.sm.v = append(g.sm.v, m.Order)
	g.sm.firsts = append(g.sm.firsts, ExplainValue{Order: m.Order, Chain: m.Chain(), Path: slices.Clone(m.Path), Round: g.round})
	if k < g.m {
		g.sm.pending = append(g.sm.pending, smJob{order: m.Order, path: m.Path, sigs: m.Sigs})
	}
	return ""
}

func pathKey(p []ID) string {
	b := make([]byte, 0, 2*len(p))
	for _, id := range p {
		b = append(b, byte(id>>8), byte(id))
	}
	return string(b)
}

// verifyChain verifies the chain link by link (A4(b)), skipping links this
// general already verified: the verification work grows with the distinct
// chains, not with the messages received.
func (g *General) verifyChain(m Message) bool {
	for t := range m.Path {
		sig := m.Sigs[t]
		if finalLink(t, g.m) {
			// B9: the m-th link is not signed; A2 authenticated the sender.
			if len(sig) != 0 {
				return false
			}
			continue
		}
		if len(sig) != ed25519.SignatureSize {
			return false
		}
		var prev []byte
		if t > 0 {
			prev = m.Sigs[t-1]
		}
		g.sm.buf = linkBytes(g.sm.buf[:0], m.Run, m.Seq, m.Order, m.Path[:t+1], prev)
		g.sm.buf = append(g.sm.buf, sig...)
		if ok, done := g.sm.verified[string(g.sm.buf)]; done {
			if !ok {
				return false
			}
			continue
		}
		msg := g.sm.buf[:len(g.sm.buf)-len(sig)]
		ok, memo := false, false
		if g.memo != nil {
			ok, memo = g.memo[string(g.sm.buf)]
		}
		if !memo {
			ok = ed25519.Verify(g.keys.Public[m.Path[t]], msg, sig)
			if g.memo != nil {
				g.memo[string(g.sm.buf)] = ok
			}
		}
		g.stats.SignaturesVerified++
		g.sm.verified[string(g.sm.buf)] = ok
		if !ok {
			return false
		}
	}
	return true
}
