package tcp

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
)

// The TCP adversary: traitors that control timing and links, run against
// real Nodes over loopback in this process. A Scenario says which generals
// are traitors and what each does; runScenario runs it and checkScenario
// checks, after every run, what the runtime promises: when no loyal
// general reports that it ran out of time and at most m generals were
// faulty (traitors, and peers a loyal general saw absent, gone or late),
// IC1 and IC2 hold among the loyal generals; every traitor whose attack is
// visible is among the faults its victims report; no loyal general is
// blamed unless the run says it was out of time or over m. The pieces
// (Attack, wrapEndpoint, the stall and deaf listeners, the connection
// flood) are written to be reused by other runtimes over Node.

var adversarySeed = flag.Uint64("adversary.seed", 1, "seed of TestAdversary's random scenarios (each failure prints the seed that replays it)")

// Attack is what a traitor does to timing and links.
type Attack string

// The attacks.
const (
	// Lie: the traitor runs the general with its lying strategy only.
	Lie Attack = "lie"
	// WithholdMarkers: it sends no end-of-round markers to its victims,
	// from round From on; they close those rounds at the deadline while
	// the others run ahead.
	WithholdMarkers Attack = "withhold-markers"
	// StallHandshakes: it accepts connections and never answers.
	StallHandshakes Attack = "stall-handshakes"
	// StopReading: it completes the handshakes of those who dial it and
	// never reads again; it sends nothing.
	StopReading Attack = "stop-reading"
	// Reset: it runs the general and, at the end of round From, resets
	// every connection it has.
	Reset Attack = "reset"
	// Replay: it runs the general, sends every message twice, and sends
	// each round's messages again in the next round.
	Replay Attack = "replay"
	// Ahead: its clock runs one round ahead of the others'.
	Ahead Attack = "ahead"
)

// visible reports whether every victim of the attack can see it: it then
// must be among the faults they report.
func (a Attack) visible() bool {
	return a == StallHandshakes || a == StopReading || a == Reset || a == WithholdMarkers
}

// TraitorSpec is one traitor of a scenario.
type TraitorSpec struct {
	ID       byzantine.ID
	Attack   Attack
	Strategy byzantine.Strategy // lies, for the attacks that run the general
	Victims  []byzantine.ID     // WithholdMarkers: whom it withholds them from
	From     int                // WithholdMarkers, Reset: the first round concerned
}

// Scenario is one run of the adversary.
type Scenario struct {
	Name      string
	Algorithm byzantine.Algorithm
	N, M      int
	Round     time.Duration
	Traitors  []TraitorSpec
	Absent    []byzantine.ID // generals that never come up (crashed before the run)
	Flood     int            // strangers that keep opening connections to every loyal general
}

func (sc Scenario) String() string {
	var parts []string
	for _, tr := range sc.Traitors {
		s := fmt.Sprintf("%d:%s", tr.ID, tr.Attack)
		if tr.Strategy != "" {
			s += "+" + string(tr.Strategy)
		}
		if len(tr.Victims) > 0 {
			s += fmt.Sprintf("->%v", tr.Victims)
		}
		if tr.Attack == WithholdMarkers || tr.Attack == Reset {
			s += fmt.Sprintf("@%d", tr.From)
		}
		parts = append(parts, s)
	}
	for _, a := range sc.Absent {
		parts = append(parts, fmt.Sprintf("%d:absent", a))
	}
	if sc.Flood > 0 {
		parts = append(parts, fmt.Sprintf("flood %d", sc.Flood))
	}
	return fmt.Sprintf("%s(%d) n=%d [%s]", sc.Algorithm, sc.M, sc.N, strings.Join(parts, " "))
}

func (sc Scenario) traitor(id byzantine.ID) (TraitorSpec, bool) {
	for _, tr := range sc.Traitors {
		if tr.ID == id {
			return tr, true
		}
	}
	return TraitorSpec{}, false
}

// markerFrame is the end-of-round marker of round r of run.
func markerFrame(run byzantine.RunID, r int) []byte {
	f := binary.BigEndian.AppendUint16([]byte{kindMarker}, uint16(r))
	return append(f, run[:]...)
}

// attacker is a traitor's endpoint: the node, with its attack applied.
type attacker struct {
	*Node
	spec TraitorSpec
	mu   sync.Mutex
	last []byzantine.Message // Replay: the previous round's messages
	this []byzantine.Message
}

func (a *attacker) Send(ctx context.Context, msg byzantine.Message) error {
	err := a.Node.Send(ctx, msg)
	if a.spec.Attack == Replay {
		a.Node.Send(ctx, msg)
		a.mu.Lock()
		a.this = append(a.this, msg)
		a.mu.Unlock()
	}
	return err
}

func (a *attacker) EndRound(ctx context.Context, r int) error {
	switch a.spec.Attack {
	case WithholdMarkers:
		if r < a.spec.From {
			return a.Node.EndRound(ctx, r)
		}
		for id := range a.keys {
			if p := byzantine.ID(id); p != a.id && !slices.Contains(a.spec.Victims, p) {
				a.SendRaw(p, markerFrame(a.run, r))
			}
		}
		return nil
	case Reset:
		if r == a.spec.From {
			a.Node.Flush(ctx)
			a.mu.Lock()
			var conns []net.Conn
			a.Node.mu.Lock()
			for c := range a.Node.conns {
				conns = append(conns, c)
			}
			a.Node.mu.Unlock()
			a.mu.Unlock()
			for _, c := range conns {
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetLinger(0) // a reset, not an orderly close
				}
				c.Close()
			}
			return nil
		}
	case Replay:
		a.mu.Lock()
		old := a.last
		a.last, a.this = a.this, nil
		a.mu.Unlock()
		for _, m := range old {
			a.Node.Send(ctx, m) // a round late: refused
		}
	}
	return a.Node.EndRound(ctx, r)
}

// connFlood keeps k strangers connecting to every address in addrs: each
// holds a connection until it is closed, then opens another, until stop.
func connFlood(addrs []string, k int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() {
			addr := addrs[i%len(addrs)]
			buf := make([]byte, 1)
			for {
				select {
				case <-done:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond):
					}
					continue
				}
				stopRead := context.AfterFunc(contextOf(done), func() { c.Close() })
				c.Read(buf) // until the general evicts it
				stopRead()
				c.Close()
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// contextOf is a context that ends when done is closed.
func contextOf(done <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-done
		cancel()
	}()
	return ctx
}

// runScenario runs sc once and returns every general's result (traitors'
// and absent generals' entries are zero).
func runScenario(t *testing.T, sc Scenario) []byzantine.GeneralResult {
	t.Helper()
	keys := newKeys(t, sc.N)
	nodes := make([]*Node, sc.N)
	addrs := make([]string, sc.N)
	// A deaf traitor signs the run id, which covers every address: it
	// binds its port first and serves once the run id is known.
	deaf := make(map[int]*deafSlot)
	for i := range sc.N {
		id := byzantine.ID(i)
		tr, isTraitor := sc.traitor(id)
		switch {
		case slices.Contains(sc.Absent, id):
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addrs[i] = ln.Addr().String()
			ln.Close() // connections are refused
		case isTraitor && tr.Attack == StallHandshakes:
			addrs[i] = newStallListener(t).ln.Addr().String()
		case isTraitor && tr.Attack == StopReading:
			deaf[i] = newDeafSlot(t, id, keys[i])
			addrs[i] = deaf[i].addr
		default:
			nodes[i] = listenAt(t, "127.0.0.1:0", id, keys[i])
			addrs[i] = nodes[i].Addr()
		}
	}
	c := clusterOf(addrs, keys)
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = sc.Algorithm, sc.N, sc.M
	cfg.Order = byzantine.Attack
	cfg.RoundTimeout = sc.Round
	start := time.Now().Add(max(time.Second, sc.Round))
	run := RunID(c, start, cfg.Seq)
	for _, s := range deaf {
		s.serve(run)
	}
	if sc.Flood > 0 {
		var loyal []string
		for i, nd := range nodes {
			if _, ok := sc.traitor(byzantine.ID(i)); !ok && nd != nil {
				loyal = append(loyal, addrs[i])
			}
		}
		stop := connFlood(loyal, sc.Flood)
		defer stop()
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(sc.M+4)*sc.Round+30*time.Second)
	defer cancel()
	res := make([]byzantine.GeneralResult, sc.N)
	errs := make([]error, sc.N)
	var wg sync.WaitGroup
	for i, nd := range nodes {
		if nd == nil {
			continue
		}
		tr, isTraitor := sc.traitor(byzantine.ID(i))
		if !isTraitor {
			wg.Go(func() { res[i], _, errs[i] = RunNode(ctx, nd, cfg, keys[i], c, start) })
			continue
		}
		wg.Go(func() {
			tcfg := cfg
			tcfg.RunID = run
			if tr.Strategy != "" {
				tcfg.Faulty = []byzantine.Traitor{{ID: tr.ID, Strategy: tr.Strategy}}
			}
			g, err := byzantine.NewGeneral(tcfg, tr.ID, byzantine.Keyring{Private: keys[i], Public: publicKeys(keys)})
			if err != nil {
				errs[i] = err
				return
			}
			tstart := start
			if tr.Attack == Ahead {
				tstart = start.Add(-sc.Round)
			}
			runOver(ctx, nd, g, &attacker{Node: nd, spec: tr}, c, tcfg, tstart, nil)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%v: general %d: %v", sc, i, err)
		}
	}
	if sc.Flood > 0 {
		refused := 0
		for _, nd := range nodes {
			if nd != nil {
				refused += nd.Refused()
			}
		}
		t.Logf("%v: the flood's connections refused or evicted: %d", sc, refused)
	}
	return res
}

func publicKeys(keys []ed25519.PrivateKey) []ed25519.PublicKey {
	pubs := make([]ed25519.PublicKey, len(keys))
	for i, k := range keys {
		pubs[i] = k.Public().(ed25519.PublicKey)
	}
	return pubs
}

// deafSlot is a StopReading traitor's listener, bound before the run id
// is known and serving once it is.
type deafSlot struct {
	t    *testing.T
	id   byzantine.ID
	priv ed25519.PrivateKey
	ln   net.Listener
	addr string
}

func newDeafSlot(t *testing.T, id byzantine.ID, priv ed25519.PrivateKey) *deafSlot {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &deafSlot{t: t, id: id, priv: priv, ln: ln, addr: ln.Addr().String()}
}

func (s *deafSlot) serve(run byzantine.RunID) { serveDeaf(s.t, s.ln, s.id, s.priv, run) }

// verdict is what checkScenario concluded of one run.
type verdict int

const (
	verdictChecked      verdict = iota // IC1 and IC2 checked and holding
	verdictInconclusive                // out of time, or more than m faults: nothing to check
)

// checkScenario checks one run's results; it reports IC violations and
// missing fault reports with t.Errorf.
func checkScenario(t *testing.T, sc Scenario, res []byzantine.GeneralResult) verdict {
	t.Helper()
	faulty := slices.Clone(sc.Absent)
	for _, tr := range sc.Traitors {
		faulty = append(faulty, tr.ID)
	}
	isLoyal := func(id byzantine.ID) bool { return !slices.Contains(faulty, id) }
	union := slices.Clone(faulty)
	outOfTime := false
	for i, r := range res {
		id := byzantine.ID(i)
		if !isLoyal(id) {
			continue
		}
		if len(r.Overran) > 0 {
			outOfTime = true
			t.Logf("%v: general %d ran out of time in rounds %v", sc, i, r.Overran)
		}
		for _, p := range r.FaultyPeers() {
			if !slices.Contains(union, p) {
				union = append(union, p)
			}
			if isLoyal(p) {
				t.Logf("%v: general %d counts loyal general %d as faulty (%+v)", sc, i, p, r.Faults)
			}
		}
		for _, tr := range sc.Traitors {
			victim := tr.Attack != WithholdMarkers || slices.Contains(tr.Victims, id)
			if tr.Attack.visible() && victim && !slices.Contains(r.FaultyPeers(), tr.ID) {
				t.Errorf("%v: general %d does not report traitor %d (%s) among the faults it saw %+v", sc, i, tr.ID, tr.Attack, r.Faults)
			}
		}
		for _, a := range sc.Absent {
			if !slices.Contains(r.FaultyPeers(), a) {
				t.Errorf("%v: general %d does not report absent general %d among the faults it saw %+v", sc, i, a, r.Faults)
			}
		}
	}
	if outOfTime || len(union) > sc.M {
		t.Logf("%v: inconclusive (out of time %v, faulty %v)", sc, outOfTime, union)
		return verdictInconclusive
	}
	var first byzantine.Order
	for i, r := range res {
		if i == 0 || !isLoyal(byzantine.ID(i)) {
			continue
		}
		if first == "" {
			first = r.Decision
		}
		if r.Decision != first {
			t.Errorf("%v: IC1 broken: general %d decided %s, another loyal general %s (all kept the schedule, %d faulty <= m)", sc, i, r.Decision, first, len(union))
		}
		if isLoyal(0) && r.Decision != byzantine.Attack {
			t.Errorf("%v: IC2 broken: general %d decided %s against the loyal commander's attack (rejected %v, faults %+v)", sc, i, r.Decision, r.Stats.Rejected, r.Faults)
		}
	}
	return verdictChecked
}

// fixedScenarios are the attacks that broke the runtime before, as the
// review that found them ran them.
// lightRound is the round timeout of the small scenarios: long enough
// that a scheduling pause of the loaded test process (all generals share
// it) rarely reaches the pause watcher's threshold, a sixteenth of it.
func lightRound() time.Duration {
	if raceEnabled {
		return 750 * time.Millisecond
	}
	return 500 * time.Millisecond
}

func fixedScenarios() []Scenario {
	heavy := 2 * time.Second // OM(4) with 13 generals: 130,000 messages in round 4
	if raceEnabled {
		heavy = 3 * time.Second
	}
	return []Scenario{
		// One traitor sends every order honestly and withholds its
		// end-of-round markers from one victim; the others run a round
		// ahead and their 720 round-4 relays per peer reach the victim
		// while it is still in round 3 (it refused 5,104 of them as
		// flood and decided retreat against a loyal attack).
		{Name: "withhold-markers", Algorithm: byzantine.OM, N: 13, M: 4, Round: heavy,
			Traitors: []TraitorSpec{{ID: 5, Attack: WithholdMarkers, Victims: []byzantine.ID{7}, From: 2}}},
		// One general is down: a crash within m (every live general said
		// it ran out of time).
		{Name: "absent-om", Algorithm: byzantine.OM, N: 7, M: 2, Round: lightRound(), Absent: []byzantine.ID{4}},
		{Name: "absent-sm", Algorithm: byzantine.SM, N: 5, M: 2, Round: lightRound(), Absent: []byzantine.ID{0},
			Traitors: []TraitorSpec{{ID: 2, Attack: Lie, Strategy: byzantine.TwoFaced}}},
		// A traitor never answers handshakes (round 0 began only after
		// every dial returned, and the lieutenants decided retreat).
		{Name: "stall-om", Algorithm: byzantine.OM, N: 4, M: 1, Round: lightRound(),
			Traitors: []TraitorSpec{{ID: 3, Attack: StallHandshakes}}},
		{Name: "stall-sm", Algorithm: byzantine.SM, N: 4, M: 2, Round: lightRound(),
			Traitors: []TraitorSpec{{ID: 3, Attack: StallHandshakes}, {ID: 1, Attack: Lie, Strategy: byzantine.FlipOrders}}},
		// A stranger's connection flood (it cut loyal links for the run).
		{Name: "flood", Algorithm: byzantine.OM, N: 4, M: 1, Round: lightRound(), Flood: 400,
			Traitors: []TraitorSpec{{ID: 2, Attack: Lie, Strategy: byzantine.TwoFaced}}},
	}
}

// randomScenario draws a scenario from rng: OM or SM, m from 1 to 4 (OM
// up to 2, to keep the run short), up to m traitors each with an attack
// and a lie.
func randomScenario(rng *rand.Rand) Scenario {
	alg := byzantine.OM
	if rng.IntN(2) == 0 {
		alg = byzantine.SM
	}
	var m, n int
	if alg == byzantine.OM {
		m = 1 + rng.IntN(2)
		n = 3*m + 1 + rng.IntN(2)
	} else {
		m = 1 + rng.IntN(4)
		n = m + 2 + rng.IntN(2)
	}
	attacks := []Attack{Lie, WithholdMarkers, StallHandshakes, StopReading, Reset, Replay, Ahead}
	lies := []byzantine.Strategy{"", byzantine.FlipOrders, byzantine.TwoFaced, byzantine.RandomOrders}
	sc := Scenario{Algorithm: alg, N: n, M: m, Round: lightRound()}
	ids := rng.Perm(n)[:1+rng.IntN(m)]
	for _, i := range ids {
		tr := TraitorSpec{ID: byzantine.ID(i), Attack: attacks[rng.IntN(len(attacks))], Strategy: lies[rng.IntN(len(lies))]}
		switch tr.Attack {
		case WithholdMarkers:
			tr.From = rng.IntN(m + 1)
			for range 1 + rng.IntN(2) {
				if v := byzantine.ID(rng.IntN(n)); v != tr.ID && !slices.Contains(tr.Victims, v) {
					tr.Victims = append(tr.Victims, v)
				}
			}
		case Reset:
			tr.From = rng.IntN(m) // before round m ends: its victims see it go
		case StallHandshakes, StopReading:
			tr.Strategy = ""
		}
		sc.Traitors = append(sc.Traitors, tr)
	}
	if rng.IntN(4) == 0 {
		sc.Flood = 200
	}
	return sc
}

// TestAdversary runs the fixed scenarios and a few drawn from
// -adversary.seed against real Nodes, and checks IC1, IC2 and the faults
// reported after every run. A run that was out of time or over m is
// inconclusive; too many of them fail the test, since then nothing was
// checked.
func TestAdversary(t *testing.T) {
	scs := fixedScenarios()
	seed := *adversarySeed
	rng := rand.New(rand.NewPCG(seed, 0xad7e))
	random := 6
	if testing.Short() {
		random = 2
	}
	for i := range random {
		sc := randomScenario(rng)
		sc.Name = fmt.Sprintf("seed%d-%d", seed, i)
		scs = append(scs, sc)
	}
	inconclusive := 0
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			began := time.Now()
			res := runScenario(t, sc)
			if checkScenario(t, sc, res) == verdictInconclusive {
				inconclusive++
			}
			t.Logf("%v: %v (-adversary.seed=%d)", sc, time.Since(began).Round(time.Millisecond), seed)
		})
	}
	if inconclusive > len(scs)/3 {
		t.Errorf("%d of %d runs were inconclusive (out of time, or more than m faults): too few were checked", inconclusive, len(scs))
	}
}
