package byzantine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Algorithm names one of the two agreement algorithms.
type Algorithm string

const (
	// OM is Algorithm OM(m), oral messages (B6).
	OM Algorithm = "om"
	// SM is Algorithm SM(m), signed messages (B9).
	SM Algorithm = "sm"
)

// Strategy names how a traitor behaves. Every strategy draws its randomness
// from the general's own source, seeded from Config.Seed, so a run replays.
type Strategy string

// The traitor strategies, with the names used by the dlm CLI.
const (
	// Silent sends nothing at all.
	Silent Strategy = "silent"
	// FlipOrders inverts every order it sends (see Flip).
	FlipOrders Strategy = "flip"
	// TwoFaced sends the true order to odd-numbered receivers and the
	// inverted order to even-numbered ones.
	TwoFaced Strategy = "two-faced"
	// RandomOrders sends a random order (attack, retreat or the commander's
	// order) in each message and drops one message in ten.
	RandomOrders Strategy = "random"
	// Colluding traitors share one split of the loyal lieutenants, drawn from
	// the seed, and all tell one half the commander's order and the other
	// half its inverse.
	Colluding Strategy = "colluding"
	// Late sends the true order, inverted, one round after the round ends,
	// so receivers must reject it as late (A3).
	Late Strategy = "late"
	// Forge (SM only) alters the order of every relayed chain while keeping
	// the earlier signatures, and fabricates a chain carrying a made-up
	// commander signature.
	Forge Strategy = "forge"
	// Replay (SM only) sends every message twice, re-sends every chain it
	// received verbatim, and replays signed orders from an earlier run.
	Replay Strategy = "replay"
)

// Strategies lists every strategy, in a fixed order.
func Strategies() []Strategy {
	return []Strategy{Silent, FlipOrders, TwoFaced, RandomOrders, Colluding, Late, Forge, Replay}
}

// OralStrategies lists the strategies that apply to OM (all but Forge and
// Replay, which need signatures).
func OralStrategies() []Strategy {
	return []Strategy{Silent, FlipOrders, TwoFaced, RandomOrders, Colluding, Late}
}

// Traitor marks one general as faulty and says how it lies.
type Traitor struct {
	ID       ID       `json:"id"`
	Strategy Strategy `json:"strategy"`
	// Func is the behaviour of a Custom traitor (in process only).
	Func TraitorFunc `json:"-"`
}

// Crash makes a general stop, as a crashed process does, at the start of a
// round: from that round on it sends nothing (not even end-of-round
// markers over TCP) and reports no decision. By B11 a crash is a fault: a
// crashed general counts among the m tolerated ones.
type Crash struct {
	ID    ID  `json:"id"`
	Round int `json:"round"`
}

// Fault is what the in-memory transport does to one message.
type Fault int

// The faults the in-memory transport can inject.
const (
	// Deliver delivers the message unchanged.
	Deliver Fault = iota
	// Drop loses the message (a killed messenger, B1).
	Drop
	// Duplicate delivers the message twice.
	Duplicate
	// Corrupt alters the order carried by the message (a spy, B1).
	Corrupt
	// Delay delivers the message one round late, after its round ended.
	Delay
	// Missing is not injected: a trace records with it a message a general
	// expected and never received (A3), which it counted as the default
	// RETREAT (OM).
	Missing
)

// String returns the fault's name.
func (f Fault) String() string {
	switch f {
	case Deliver:
		return "deliver"
	case Drop:
		return "drop"
	case Duplicate:
		return "duplicate"
	case Corrupt:
		return "corrupt"
	case Delay:
		return "delay"
	case Missing:
		return "missing"
	}
	return fmt.Sprintf("fault(%d)", int(f))
}

// Faults configures the fault hooks of the in-memory transport. Rates are
// probabilities per message, drawn from a source seeded by Config.Seed. By A1
// a faulty link cannot be told from a faulty general: a test that injects
// faults on loyal generals' links counts them among the m traitors.
type Faults struct {
	// Drop, Duplicate, Corrupt and Delay are the probabilities that a
	// message is lost, delivered twice, has its order altered, or arrives
	// one round late.
	Drop      float64 `json:"drop,omitempty"`
	Duplicate float64 `json:"duplicate,omitempty"`
	Corrupt   float64 `json:"corrupt,omitempty"`
	Delay     float64 `json:"delay,omitempty"`
	// Partition lists groups of generals; a message between two generals
	// listed in different groups is dropped.
	Partition [][]ID `json:"partition,omitempty"`
	// Hook, when set, decides the fault for every message instead of the
	// rates (the partition still applies first).
	Hook func(Message) Fault `json:"-"`
}

func (f Faults) active() bool {
	return f.Drop > 0 || f.Duplicate > 0 || f.Corrupt > 0 || f.Delay > 0 || len(f.Partition) > 0 || f.Hook != nil
}

// Config describes one run of an agreement algorithm. It is plain data:
// print it, store it, replay it with Run.
type Config struct {
	// Algorithm is OM or SM.
	Algorithm Algorithm `json:"algorithm"`
	// Generals is n, the number of generals including the commander (id 0).
	Generals int `json:"generals"`
	// MaxTraitors is m, the number of traitors the run must tolerate; OM(m)
	// and SM(m) are run with this m.
	MaxTraitors int `json:"max_traitors"`
	// Order is the loyal commander's order.
	Order Order `json:"order"`
	// Faulty lists the traitors and their strategies.
	Faulty []Traitor `json:"faulty,omitempty"`
	// Majority selects the majority variant of B5 (and of choice, B8).
	Majority MajorityVariant `json:"majority"`
	// RoundTimeout bounds one round (mu + tau of B9) on real transports; a
	// round also ends as soon as every peer finished it. The in-memory
	// transport is synchronous and ends a round when every sent message has
	// been delivered.
	RoundTimeout time.Duration `json:"round_timeout"`
	// Seed seeds every random choice: keys, traitors, faults.
	Seed int64 `json:"seed"`
	// Seq is the sequence number of this run, carried by every message and
	// signed into every SM message so that an order from another run cannot
	// be replayed (B9); OM and SM refuse other sequence numbers as stale.
	Seq uint64 `json:"seq"`
	// RunID binds every message and signature to this run (see RunID and
	// Run). Zero means one derived from Seq; package tcp derives it from
	// the cluster, the start time and Seq.
	RunID RunID `json:"run_id,omitzero"`
	// AllowUnsafe lets Validate accept n < 3m+1 for OM, n < m+2 for SM, and
	// more than m traitors, to demonstrate B3.
	AllowUnsafe bool `json:"allow_unsafe,omitempty"`
	// Crashes lists the generals that crash, and when (for demonstrations
	// and tests of crash faults, on every transport).
	Crashes []Crash `json:"crashes,omitempty"`
	// Faults are the in-memory transport's fault hooks.
	Faults Faults `json:"faults,omitzero"`
	// Trace records every delivered message in Result.Trace.
	Trace bool `json:"trace,omitempty"`
	// Explain lists the generals whose GeneralResult carries an
	// Explanation of their decision.
	Explain []ID `json:"explain,omitempty"`
}

// DefaultConfig returns OM(1) with four loyal generals, the order Attack,
// the Vote majority, a 500 ms round timeout, seed 1 and sequence number 1.
func DefaultConfig() Config {
	return Config{
		Algorithm:    OM,
		Generals:     4,
		MaxTraitors:  1,
		Order:        Attack,
		Majority:     Vote,
		RoundTimeout: 500 * time.Millisecond,
		Seed:         1,
		Seq:          1,
	}
}

// Sentinel errors of Validate and Run.
var (
	// ErrInvalidConfig is wrapped by every error Validate returns.
	ErrInvalidConfig = errors.New("byzantine: invalid config")
	// ErrUnsafe is wrapped when the config cannot guarantee IC1 and IC2
	// (n < 3m+1 for OM, B3; n < m+2 for SM, B9; more than m traitors) and
	// AllowUnsafe is not set.
	ErrUnsafe = errors.New("byzantine: unsafe config")
	// ErrTooLarge is wrapped when OM(m) would send more messages than
	// MaxOMMessages.
	ErrTooLarge = errors.New("byzantine: run too large")
	// ErrStopped is wrapped, together with ctx.Err(), when a run's context
	// ends before the run does.
	ErrStopped = errors.New("byzantine: run stopped")
	// ErrCrashed is returned by RunGeneral for a general that Config.Crashes
	// makes crash.
	ErrCrashed = errors.New("byzantine: general crashed")
	// ErrPeerAbsent is wrapped by an Endpoint's Send when it has no link
	// to the peer: the peer never came up, no handshake with it succeeded
	// yet, or its connection closed or broke. RunGeneral counts such a
	// peer among the faults it saw (GeneralResult.Faults), as a crash.
	ErrPeerAbsent = errors.New("byzantine: no link to the peer")
)

// MaxGenerals is the largest n a run accepts.
const MaxGenerals = 256

// MaxOMMessages bounds the messages of one OM run (n^(m+1) growth, B6),
// and of all n instances of an interactive run together.
const MaxOMMessages = 50_000_000

// MaxTraceMessages bounds the messages of a run that records a trace
// (Config.Trace): every delivery is kept in memory, so a traced run is
// held to a far smaller size than an untraced one.
const MaxTraceMessages = 200_000

// OMMessages returns the number of messages OM(m) sends with n loyal
// generals: (n-1) + (n-1)(n-2) + ... + (n-1)(n-2)...(n-m-1) (B6). It
// saturates at the largest int instead of overflowing.
func OMMessages(n, m int) int {
	total, term := 0, 1
	for k := 0; k <= m; k++ {
		f := n - 1 - k
		if f <= 0 {
			break
		}
		if term > (1<<62)/f {
			return 1<<63 - 1
		}
		term *= f
		total += term
		if total < 0 {
			return 1<<63 - 1
		}
	}
	return total
}

// SMLoyalMessages returns the number of messages SM(m), m >= 1, sends when
// every general is loyal: (n-1)^2 (the commander's n-1 orders, then every
// lieutenant relays once to the n-2 others). For m = 0 it is n-1.
func SMLoyalMessages(n, m int) int {
	if m == 0 {
		return n - 1
	}
	return (n - 1) * (n - 1)
}

// Validate checks cfg and says why it is refused. Every error wraps
// ErrInvalidConfig; unsafe sizes also wrap ErrUnsafe, oversized runs
// ErrTooLarge.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	unsafe := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w: "+format+"; set AllowUnsafe to run it anyway", append([]any{ErrInvalidConfig, ErrUnsafe}, args...)...)
	}
	n, m := c.Generals, c.MaxTraitors
	if c.Algorithm != OM && c.Algorithm != SM {
		return bad("algorithm %q: want %q or %q", c.Algorithm, OM, SM)
	}
	if n < 2 || n > MaxGenerals {
		return bad("%d generals: want 2 to %d (a commander and at least one lieutenant)", n, MaxGenerals)
	}
	if m < 0 {
		return bad("max traitors %d is negative", m)
	}
	if m > n-2 {
		// Not even AllowUnsafe runs this: there are not enough lieutenants
		// to relay through m levels.
		if c.Algorithm == OM {
			return fmt.Errorf("%w: %w: OM(%d) relays through m levels of distinct lieutenants, so it needs at least m+2 = %d generals (and n >= 3m+1 = %d to be safe), got n = %d: m must be at most n-2, even with AllowUnsafe",
				ErrInvalidConfig, ErrUnsafe, m, m+2, 3*m+1, n)
		}
		return fmt.Errorf("%w: %w: SM(%d) needs n >= m+2 = %d generals, got n = %d (with fewer the problem is vacuous: m must be at most n-2, even with AllowUnsafe)",
			ErrInvalidConfig, ErrUnsafe, m, m+2, n)
	}
	// The traitors' ids before their count: a general listed twice is a
	// typo, not two traitors over m.
	seen := make(map[ID]bool, len(c.Faulty))
	for _, t := range c.Faulty {
		if t.ID < 0 || int(t.ID) >= n {
			return bad("traitor id %d out of range 0..%d", t.ID, n-1)
		}
		if seen[t.ID] {
			return bad("general %d listed twice among the traitors: list each traitor once", t.ID)
		}
		seen[t.ID] = true
	}
	if !c.AllowUnsafe {
		switch {
		case c.Algorithm == OM && n < 3*m+1:
			return unsafe("OM(%d) needs n >= 3m+1 = %d generals, got n = %d (with oral messages more than two thirds of the generals must be loyal)", m, 3*m+1, n)
		case c.Algorithm == SM && n < m+2:
			return unsafe("SM(%d) needs n >= m+2 = %d generals, got n = %d (a commander and m traitors leave at least one loyal lieutenant to agree)", m, m+2, n)
		case len(c.Faulty) > m:
			return unsafe("%d traitors but the run tolerates m = %d", len(c.Faulty), m)
		case c.faultyCount() > m:
			return unsafe("%d faulty generals (traitors and crashed) but the run tolerates m = %d", c.faultyCount(), m)
		}
	}
	if !c.Order.valid() {
		return bad("order %q: want 1 to %d bytes", c.Order, MaxOrderLen)
	}
	if c.Majority != Vote && c.Majority != Median {
		return bad("majority %q: want %q or %q", c.Majority, Vote, Median)
	}
	if c.RoundTimeout <= 0 {
		return bad("round timeout %v must be positive", c.RoundTimeout)
	}
	for _, t := range c.Faulty {
		if t.Strategy == Custom {
			if t.Func == nil {
				return bad("traitor %d: strategy %q needs Traitor.Func (in process only)", t.ID, Custom)
			}
			continue
		}
		if t.Func != nil {
			return bad("traitor %d: Func is only for strategy %q", t.ID, Custom)
		}
		if !slices.Contains(Strategies(), t.Strategy) {
			return bad("traitor %d: unknown strategy %q (want one of %v)", t.ID, t.Strategy, Strategies())
		}
		if c.Algorithm == OM && (t.Strategy == Forge || t.Strategy == Replay) {
			return bad("traitor %d: strategy %q needs signatures (SM only)", t.ID, t.Strategy)
		}
	}
	crashed := make(map[ID]bool, len(c.Crashes))
	for _, cr := range c.Crashes {
		if cr.ID < 0 || int(cr.ID) >= n {
			return bad("crashed general %d out of range 0..%d", cr.ID, n-1)
		}
		if crashed[cr.ID] {
			return bad("crashed general %d listed twice", cr.ID)
		}
		crashed[cr.ID] = true
		if cr.Round < 0 || cr.Round > m {
			return bad("general %d crashes in round %d: want 0..%d", cr.ID, cr.Round, m)
		}
	}
	for _, r := range []float64{c.Faults.Drop, c.Faults.Duplicate, c.Faults.Corrupt, c.Faults.Delay} {
		if r < 0 || r > 1 {
			return bad("fault rate %v outside [0, 1]", r)
		}
	}
	if c.Algorithm == OM && OMMessages(n, m) > MaxOMMessages {
		count := strconv.Itoa(OMMessages(n, m))
		if OMMessages(n, m) == math.MaxInt {
			count = "over 9.2e18" // saturated: the exact count overflows an int
		}
		return fmt.Errorf("%w: %w: OM(%d) with %d generals sends %s messages, more than %d", ErrInvalidConfig, ErrTooLarge, m, n, count, MaxOMMessages)
	}
	for _, id := range c.Explain {
		if id < 0 || int(id) >= n {
			return bad("explain: general %d out of range 0..%d", id, n-1)
		}
	}
	if len(c.Explain) > 0 && c.Algorithm == OM && explainNodes(n, m) > MaxExplainNodes {
		return fmt.Errorf("%w: %w: the OM(%d) decision tree of a lieutenant among %d generals has more than %d nodes; explain a smaller run",
			ErrInvalidConfig, ErrTooLarge, m, n, MaxExplainNodes)
	}
	if c.Trace {
		// SM relays each new value once; a traitorous commander can make
		// every lieutenant hold several, hence the factor 2.
		msgs := OMMessages(n, m)
		if c.Algorithm == SM {
			msgs = 2 * SMLoyalMessages(n, m)
		}
		if msgs > MaxTraceMessages {
			return fmt.Errorf("%w: %w: a trace of %s(%d) with %d generals would hold about %d messages, more than %d; run it without a trace",
				ErrInvalidConfig, ErrTooLarge, strings.ToUpper(string(c.Algorithm)), m, n, msgs, MaxTraceMessages)
		}
	}
	return nil
}

// faultyCount counts the generals that are traitors or crash.
func (c Config) faultyCount() int {
	ids := make(map[ID]bool)
	for _, t := range c.Faulty {
		ids[t.ID] = true
	}
	for _, cr := range c.Crashes {
		ids[cr.ID] = true
	}
	return len(ids)
}

// CrashRound returns the round at which general id crashes, or -1 when it
// does not.
func (c Config) CrashRound(id ID) int {
	for _, cr := range c.Crashes {
		if cr.ID == id {
			return cr.Round
		}
	}
	return -1
}

// StrategyOf returns the strategy of general id, or "" when it is loyal.
func (c Config) StrategyOf(id ID) Strategy { return c.strategyOf(id) }

// funcOf returns the function of a Custom traitor id, nil otherwise.
func (c Config) funcOf(id ID) TraitorFunc {
	for _, t := range c.Faulty {
		if t.ID == id && t.Strategy == Custom {
			return t.Func
		}
	}
	return nil
}

// strategyOf returns the strategy of general id, or "" when it is loyal.
func (c Config) strategyOf(id ID) Strategy {
	for _, t := range c.Faulty {
		if t.ID == id {
			return t.Strategy
		}
	}
	return ""
}
