package byzantine

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Stats counts what one general did during a run.
type Stats struct {
	// Sent is the number of messages sent.
	Sent int `json:"sent"`
	// Bytes is the wire size of the messages sent.
	Bytes int64 `json:"bytes"`
	// SignaturesMade counts ed25519 signatures made.
	SignaturesMade int `json:"signatures_made"`
	// SignaturesVerified counts ed25519 verifications performed; a chain
	// prefix already verified is not verified again.
	SignaturesVerified int `json:"signatures_verified"`
	// Accepted counts messages received and believed.
	Accepted int `json:"accepted"`
	// Rejected counts messages received and refused, by reason.
	Rejected map[RejectReason]int `json:"rejected,omitempty"`
}

// add accumulates o into s.
func (s *Stats) add(o Stats) {
	s.Sent += o.Sent
	s.Bytes += o.Bytes
	s.SignaturesMade += o.SignaturesMade
	s.SignaturesVerified += o.SignaturesVerified
	s.Accepted += o.Accepted
	for r, c := range o.Rejected {
		if s.Rejected == nil {
			s.Rejected = make(map[RejectReason]int)
		}
		s.Rejected[r] += c
	}
}

// GeneralOption configures a General.
type GeneralOption func(*General)

// WithHistory gives a Replay traitor signed messages recorded from an
// earlier run, which it replays (B9: receivers must refuse them by their
// sequence number).
func WithHistory(msgs []Message) GeneralOption {
	return func(g *General) { g.history = msgs }
}

// General is the message-driven state machine of one general running OM(m)
// or SM(m). It knows nothing of networks: a driver calls, for each round r
// from 0 to m+1, Advance(r) on every general, then Outbox to collect what
// each sends in round r and Receive to deliver it, and finally Decide. Round
// m+1 carries only stragglers, which are rejected as late. A General is not
// safe for concurrent use.
type General struct {
	halted   bool // the stream under way was halted: see halt
	cfg      Config
	run      RunID // cfg.Run(), carried by every message
	id       ID
	n, m     int
	strategy Strategy // "" for a loyal general
	rng      *rand.Rand
	keys     Keyring
	round    int
	stats    Stats
	late     []Message // Late strategy: held until the next round
	groupA   []bool    // Colluding: the half of the loyal told the true order
	faulty   []bool
	history  []Message
	custom   TraitorFunc // Custom strategy

	om omState
	sm smState
	// memo, shared by the generals of one in-memory run, remembers the
	// results of ed25519.Verify, a pure function, to save CPU. Each general
	// still checks (and counts) every distinct link itself.
	memo map[string]bool
	// signMemo, shared by the runs of one Exhaust, remembers signatures:
	// ed25519 is deterministic, so a cached one is the one Sign would make.
	signMemo map[string][]byte
	sink     func(Message) // set by stream
}

type omState struct {
	levels [][]Order // levels[d][idx]: value received along a path with d relays
	radix  []int     // radix[t] = n-1-t choices for the t-th relay
	used   []bool
	bufs   [][]Order
	path   []ID
}

type smJob struct {
	order Order
	path  []ID
	sigs  [][]byte
}

type smState struct {
	v         []Order
	commander bool  // an order from the commander (a chain v:0) was accepted
	from      []int // per sender: messages examined (shape valid, not duplicates)
	seen      map[string]struct{}
	verified  map[string]bool
	pending   []smJob // accepted this round, relayed next round
	ready     []smJob
	firsts    []ExplainValue // per order of v: the first chain that brought it
	received  []Message      // Replay strategy: accepted this round
	resend    []Message      // Replay strategy: accepted last round, re-sent this round
	buf       []byte
}

// NewGeneral returns general id of the run cfg. For SM, keys must hold the
// general's private key and all n public keys; OM ignores keys.
func NewGeneral(cfg Config, id ID, keys Keyring, opts ...GeneralOption) (*General, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := cfg.Generals
	if id < 0 || int(id) >= n {
		return nil, fmt.Errorf("%w: general id %d out of range 0..%d", ErrInvalidConfig, id, n-1)
	}
	if cfg.Algorithm == SM {
		if len(keys.Private) != ed25519.PrivateKeySize || len(keys.Public) != n {
			return nil, fmt.Errorf("%w: SM general %d needs its private key and %d public keys", ErrInvalidConfig, id, n)
		}
		for i, p := range keys.Public {
			if len(p) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("%w: public key of general %d has %d bytes", ErrInvalidConfig, i, len(p))
			}
		}
	}
	g := &General{
		cfg:      cfg,
		run:      cfg.Run(),
		id:       id,
		n:        n,
		m:        cfg.MaxTraitors,
		strategy: cfg.strategyOf(id),
		rng:      rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(id)+1)),
		keys:     keys,
		round:    -1,
		faulty:   make([]bool, n),
	}
	for _, t := range cfg.Faulty {
		g.faulty[t.ID] = true
	}
	for _, o := range opts {
		o(g)
	}
	if g.strategy == Colluding {
		g.groupA = colludingSplit(cfg)
	}
	g.custom = cfg.funcOf(id)
	if cfg.Algorithm == OM && id != 0 {
		g.om.radix = make([]int, g.m+1)
		for t := 1; t <= g.m; t++ {
			g.om.radix[t] = n - 1 - t
		}
		g.om.levels = make([][]Order, g.m+1)
		g.om.used = make([]bool, n)
		g.om.bufs = make([][]Order, g.m+1)
		for d := range g.om.bufs {
			g.om.bufs[d] = make([]Order, 0, n)
		}
		g.om.path = make([]ID, 0, g.m+2)
	}
	if cfg.Algorithm == SM {
		g.sm.seen = make(map[string]struct{})
		g.sm.from = make([]int, n)
		g.sm.verified = make(map[string]bool)
	}
	return g, nil
}

// colludingSplit is the split of the loyal lieutenants every Colluding
// traitor derives from the seed: groupA[id] is true for the half told the
// commander's order; the others are told its inverse.
func colludingSplit(cfg Config) []bool {
	faulty := make([]bool, cfg.Generals)
	for _, t := range cfg.Faulty {
		faulty[t.ID] = true
	}
	var loyal []ID
	for i := 1; i < cfg.Generals; i++ {
		if !faulty[i] {
			loyal = append(loyal, ID(i))
		}
	}
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc0111de))
	r.Shuffle(len(loyal), func(i, j int) { loyal[i], loyal[j] = loyal[j], loyal[i] })
	groupA := make([]bool, cfg.Generals)
	for _, id := range loyal[:(len(loyal)+1)/2] {
		groupA[id] = true
	}
	return groupA
}

// ID returns the general's id.
func (g *General) ID() ID { return g.id }

// Loyal reports whether the general follows the algorithm.
func (g *General) Loyal() bool { return g.strategy == "" }

// Stats returns a copy of the general's counters.
func (g *General) Stats() Stats {
	s := g.stats
	s.Rejected = nil
	s.add(Stats{Rejected: g.stats.Rejected})
	return s
}

// Round returns the current round, -1 before the first Advance.
func (g *General) Round() int { return g.round }

// Advance ends the previous round and starts round r: messages of earlier
// rounds received from now on are late. Drivers advance one round at a
// time; a skipped round counts as one in which nothing arrived.
func (g *General) Advance(r int) {
	g.round = r
	if g.cfg.Algorithm == OM && g.id != 0 {
		size := 1
		for d := 0; d <= min(r, g.m); d++ {
			if d > 0 {
				size *= g.om.radix[d]
			}
			if g.om.levels[d] == nil {
				g.om.levels[d] = make([]Order, size)
			}
		}
	}
	if g.cfg.Algorithm == SM {
		g.sm.ready, g.sm.pending = g.sm.pending, nil
		g.sm.resend, g.sm.received = g.sm.received, nil
	}
}

// Outbox appends to buf the messages the general sends in the current
// round and returns the extended slice. Call it once per round, after
// Advance; in round r it relays what was received in round r-1. What it
// sends in round r depends only on what was received before Advance(r),
// whatever the strategy, so the order in which a transport delivers the
// messages of one round (in memory, lower ids send first) gives no general
// an advantage.
func (g *General) Outbox(buf []Message) []Message {
	if g.custom != nil {
		return g.customOutbox(buf)
	}
	r := g.round
	held := g.late
	g.late = nil
	for _, m := range held {
		buf = g.count(buf, m)
	}
	switch g.cfg.Algorithm {
	case OM:
		buf = g.omOutbox(buf, r)
	case SM:
		buf = g.smOutbox(buf, r)
	}
	return buf
}

// count appends m to buf (or hands it to the sink) and counts it as sent.
func (g *General) count(buf []Message, m Message) []Message {
	g.stats.Sent++
	g.stats.Bytes += int64(m.EncodedSize())
	if g.sink != nil {
		g.sink(m)
		return buf
	}
	return append(buf, m)
}

// stream is Outbox handing every message to sink as it is made, without
// buffering the round: the in-memory driver delivers OM's millions of
// messages this way.
func (g *General) stream(sink func(Message)) {
	g.sink, g.halted = sink, false
	g.Outbox(nil)
	g.sink, g.halted = nil, false
}

// halt makes the Outbox under way (see stream) stop making messages: its
// caller's context ended, and a round of OM with many generals is millions
// of messages.
func (g *General) halt() { g.halted = true }

func (g *General) reject(r RejectReason) RejectReason {
	if g.stats.Rejected == nil {
		g.stats.Rejected = make(map[RejectReason]int)
	}
	g.stats.Rejected[r]++
	return r
}

// lie applies the traitor's strategy to an honest message before it is
// signed. It returns false when the message is not to be sent.
func (g *General) lie(m *Message) bool {
	switch g.strategy {
	case Silent:
		return false
	case FlipOrders, Late:
		m.Order = Flip(m.Order)
	case TwoFaced:
		if m.To%2 == 0 {
			m.Order = Flip(m.Order)
		}
	case RandomOrders:
		if g.rng.IntN(10) == 0 {
			return false
		}
		m.Order = [3]Order{Attack, Retreat, g.cfg.Order}[g.rng.IntN(3)]
	case Colluding:
		switch {
		case g.faulty[m.To]:
		case g.groupA[m.To]:
			m.Order = g.cfg.Order
		default:
			m.Order = Flip(g.cfg.Order)
		}
	}
	return true
}

// send passes an honest message through the strategy, signs it (SM) and
// appends what is actually sent to buf.
func (g *General) send(buf []Message, m Message, s *signer) []Message {
	if !g.lie(&m) {
		return buf
	}
	if s != nil {
		m.Sigs = s.sigsFor(g, m.Order)
	}
	switch g.strategy {
	case Late:
		g.late = append(g.late, m)
		return buf
	case Forge:
		// A4: alter the signed order; the earlier signatures no longer match.
		m.Order = Flip(m.Order)
	case Replay:
		buf = g.count(buf, m) // a duplicate
	}
	return g.count(buf, m)
}

// ---- OM(m), B6 ----

func (g *General) omOutbox(buf []Message, r int) []Message {
	if g.id == 0 {
		if r != 0 {
			return buf
		}
		path := []ID{0} // shared by every message of the fan-out
		for q := 1; q < g.n; q++ {
			buf = g.send(buf, Message{From: 0, To: ID(q), Round: 0, Seq: g.cfg.Seq, Run: g.run, Order: g.cfg.Order, Path: path}, nil)
		}
		return buf
	}
	if r < 1 || r > g.m {
		return buf
	}
	// B6 step 2: for every path received in round r-1 (RETREAT if none),
	// act as commander of OM(m-r) and send the value to the others.
	o := &g.om
	o.path = append(o.path[:0], 0)
	idx := 0
	return g.omRelay(buf, r-1, &idx)
}

// omRelay enumerates the paths with d relays not naming g, in increasing
// order, which is the order of their index.
func (g *General) omRelay(buf []Message, d int, idx *int) []Message {
	if g.halted {
		return buf
	}
	o := &g.om
	if len(o.path)-1 == d {
		v := o.levels[d][*idx]
		*idx++
		if v == "" {
			v = Retreat // B6: RETREAT if none was received
		}
		np := make([]ID, len(o.path)+1)
		copy(np, o.path)
		np[len(o.path)] = g.id
		for q := 1; q < g.n; q++ {
			if o.used[q] || ID(q) == g.id {
				continue
			}
			buf = g.send(buf, Message{From: g.id, To: ID(q), Round: d + 1, Seq: g.cfg.Seq, Run: g.run, Order: v, Path: np}, nil)
		}
		return buf
	}
	for j := 1; j < g.n; j++ {
		if o.used[j] || ID(j) == g.id {
			continue
		}
		o.used[j] = true
		o.path = append(o.path, ID(j))
		buf = g.omRelay(buf, d, idx)
		o.path = o.path[:len(o.path)-1]
		o.used[j] = false
	}
	return buf
}

// checkPath validates the shape shared by OM paths and SM chains, and
// that m belongs to the current round.
func (g *General) checkPath(m Message) RejectReason {
	if why := g.shapeOf(m); why != "" {
		return why
	}
	if len(m.Path)-1 > m.Round {
		return RejectMalformed // k relays take k rounds: the chain names its round
	}
	if m.Round < g.round || g.round > g.m {
		return RejectLate
	}
	if m.Round > g.round {
		return RejectMalformed
	}
	return ""
}

// shapeOf validates what a message must be, whatever the round: addressed
// to g, an order no longer than MaxOrderLen, a path of at most m+1
// distinct generals starting with the commander, not naming g and ending
// with its sender.
func (g *General) shapeOf(m Message) RejectReason {
	if m.To != g.id {
		return RejectMisaddressed
	}
	if len(m.Path) > g.m+1 {
		return RejectOversized // relays stop at k = m
	}
	if len(m.Order) > MaxOrderLen {
		return RejectOversized
	}
	if len(m.Path) == 0 || m.Path[0] != 0 || m.Order == "" {
		return RejectMalformed
	}
	for i, j := range m.Path {
		if j < 0 || int(j) >= g.n || j == g.id || (i > 0 && j == 0) {
			return RejectMalformed
		}
		for _, k := range m.Path[:i] {
			if k == j {
				return RejectMalformed
			}
		}
	}
	if m.Path[len(m.Path)-1] != m.From {
		return RejectSpoofed // A2: the receiver knows who sent it
	}
	return ""
}

// Receive delivers one message of the current round. It returns "" when the
// message is believed and the reason otherwise; rejected messages are
// counted in Stats and never influence the decision.
func (g *General) Receive(m Message) RejectReason {
	var why RejectReason
	switch {
	case m.To == g.id && (m.Seq != g.cfg.Seq || m.Run != g.run):
		why = RejectStale // another run's message (B9), in OM as in SM
	case g.cfg.Algorithm == OM:
		why = g.omReceive(m)
	default:
		why = g.smReceive(m)
	}
	if why != "" {
		return g.reject(why)
	}
	g.stats.Accepted++
	return ""
}

func (g *General) omReceive(m Message) RejectReason {
	if why := g.checkPath(m); why != "" {
		return why
	}
	if len(m.Sigs) != 0 {
		return RejectMalformed // oral messages carry no signatures
	}
	d := len(m.Path) - 1
	if d != m.Round {
		if d < m.Round {
			return RejectLate
		}
		return RejectMalformed // B6: the path attributes it to a round
	}
	idx := 0
	for t := 1; t <= d; t++ {
		j := m.Path[t]
		rank := int(j) - 1
		if g.id < j {
			rank--
		}
		for _, k := range m.Path[1:t] {
			if k < j {
				rank--
			}
		}
		idx = idx*g.om.radix[t] + rank
	}
	lv := g.om.levels[d]
	if lv[idx] != "" {
		return RejectDuplicate
	}
	lv[idx] = m.Order
	return ""
}

// omSlotEmpty reports whether no value was received yet along m's path
// (a well-formed OM path of a round this general has started).
func (g *General) omSlotEmpty(m Message) bool {
	d := len(m.Path) - 1
	if g.id == 0 || d > g.m || d >= len(g.om.levels) || g.om.levels[d] == nil {
		return false
	}
	idx := 0
	for t := 1; t <= d; t++ {
		j := m.Path[t]
		if j <= 0 || int(j) >= g.n || j == g.id {
			return false
		}
		rank := int(j) - 1
		if g.id < j {
			rank--
		}
		for _, k := range m.Path[1:t] {
			if k == j {
				return false
			}
			if k < j {
				rank--
			}
		}
		idx = idx*g.om.radix[t] + rank
	}
	return idx >= 0 && idx < len(g.om.levels[d]) && g.om.levels[d][idx] == ""
}

// omDecide is B6 step 3 applied recursively: the value of the execution
// rooted at a path is majority(own value, values of the sub-executions).
func (g *General) omDecide() Order {
	o := &g.om
	clear(o.used)
	return g.omResolve(0, 0)
}

func (g *General) omResolve(d, idx int) Order {
	o := &g.om
	own := o.levels[d][idx]
	if own == "" {
		own = Retreat
	}
	if d == g.m {
		return own // OM(0): the value received, or RETREAT
	}
	r := o.radix[d+1]
	var rank int
	// bufs[d] is this depth's vector; deeper calls use deeper buffers.
	vs := append(o.bufs[d][:0], own)
	for q := 1; q < g.n; q++ {
		if o.used[q] || ID(q) == g.id {
			continue
		}
		o.used[q] = true
		vs = append(vs, g.omResolve(d+1, idx*r+rank))
		o.used[q] = false
		rank++
	}
	o.bufs[d] = vs
	return Majority(g.cfg.Majority, vs)
}

// Decide returns the general's decision after the last round: the order it
// obeys. A loyal commander obeys its own order. Every call recomputes it.
func (g *General) Decide() Order {
	if g.id == 0 {
		return g.cfg.Order
	}
	if g.cfg.Algorithm == OM {
		return g.omDecide()
	}
	return Choice(g.cfg.Majority, g.sm.v) // B9 step 3
}

// Values returns the set V of orders an SM lieutenant accepted (B9), in
// the order they were first accepted; nil for OM.
func (g *General) Values() []Order { return slices.Clone(g.sm.v) }
