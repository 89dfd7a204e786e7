package tcptest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

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
	// every connection it has. The links are dialled again and what was
	// lost with them is sent again, so its victims need not see it.
	Reset Attack = "reset"
	// Replay: it runs the general, sends every message twice, and sends
	// each round's messages again in the next round.
	Replay Attack = "replay"
	// Ahead: its clock runs one round ahead of the others'.
	Ahead Attack = "ahead"
)

// Visible reports whether every victim of the attack can see it: the
// traitor must then be among the faults they report.
func (a Attack) Visible() bool {
	return a == StallHandshakes || a == StopReading || a == WithholdMarkers || a == Split
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
	// Hellos: the Flood's strangers send keyless hellos (see HelloFlood)
	// rather than nothing, to the loyal generals in Flooded (every loyal
	// general when empty).
	Hellos  bool
	Flooded []byzantine.ID
	// Resets: loyal generals whose every connection the network resets
	// in every round up to m, just after the general queued its round's
	// messages and marker, as a flaky link or a middlebox does. Their
	// links come back within the round, and no general may count them
	// faulty for it.
	Resets []byzantine.ID
	// Seed draws the moments of the Reorder attack.
	Seed uint64
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
	for _, a := range sc.Resets {
		parts = append(parts, fmt.Sprintf("%d:links-reset", a))
	}
	if sc.Flood > 0 {
		kind := "flood"
		if sc.Hellos {
			kind = "hello-flood"
		}
		parts = append(parts, fmt.Sprintf("%s %d", kind, sc.Flood))
		if len(sc.Flooded) > 0 {
			parts[len(parts)-1] += fmt.Sprintf("->%v", sc.Flooded)
		}
	}
	return fmt.Sprintf("%s(%d) n=%d [%s]", sc.Algorithm, sc.M, sc.N, strings.Join(parts, " "))
}

// Traitor returns the traitor id of sc, if it is one.
func (sc Scenario) Traitor(id byzantine.ID) (TraitorSpec, bool) {
	for _, tr := range sc.Traitors {
		if tr.ID == id {
			return tr, true
		}
	}
	return TraitorSpec{}, false
}

// attacker is a traitor's endpoint: the node, with its attack applied.
type attacker struct {
	*tcp.Node
	spec TraitorSpec
	run  byzantine.RunID
	n    int
	mu   sync.Mutex
	last []byzantine.Message // Replay: the previous round's messages
	this []byzantine.Message
	// timer holds the frames of the timed attacks (see WrapOnSchedule).
	timer *timer
}

// Wrap returns node as the endpoint of a traitor doing spec in the run
// run of n generals (WithholdMarkers, Reset and Replay change what the
// node sends; the other attacks are played elsewhere: Ahead by the start
// time given to tcp.RunOver, StallHandshakes and StopReading by
// StallListener and DeafListener instead of a node).
func Wrap(node *tcp.Node, spec TraitorSpec, run byzantine.RunID, n int) byzantine.Endpoint {
	return &attacker{Node: node, spec: spec, run: run, n: n}
}

func (a *attacker) Send(ctx context.Context, msg byzantine.Message) error {
	if a.timer != nil {
		a.hold(msg.To, msg.Round, func() { a.Node.Send(context.Background(), msg) })
		return nil
	}
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
	if a.timer != nil {
		for id := range a.n {
			if p := byzantine.ID(id); p != a.spec.ID {
				a.hold(p, r, func() { a.SendRaw(p, tcp.MarkerFrame(a.run, r)) })
			}
		}
		return nil
	}
	switch a.spec.Attack {
	case WithholdMarkers:
		if r < a.spec.From {
			return a.Node.EndRound(ctx, r)
		}
		for id := range a.n {
			if p := byzantine.ID(id); p != a.spec.ID && !slices.Contains(a.spec.Victims, p) {
				a.SendRaw(p, tcp.MarkerFrame(a.run, r))
			}
		}
		return nil
	case Reset:
		if r == a.spec.From {
			a.Node.Flush(ctx)
			a.Node.ResetLinks()
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

// ConnFlood keeps k strangers connecting to the addresses in addrs: each
// holds a connection until it is closed, then opens another, until stop
// is called.
func ConnFlood(addrs []string, k int) (stop func()) {
	_, stop = flood(addrs, k, 0, nil)
	return stop
}

// helloSize is the size of a signed hello: kind, id, nonce, signature.
const helloSize = 1 + 2 + 32 + ed25519.SignatureSize

// HelloFlood keeps k strangers, who hold no key, connecting to the
// addresses in addrs; on each connection a stranger sends a hello that
// claims to come from general claim, and holds the connection until it is
// closed, then pauses 2 ms (the strangers share the test's process with
// the generals) and connects again. Half the strangers send unsigned
// hellos (the hello a general sent before hellos were signed), a quarter
// hellos of the right size with a forged signature, and a quarter hellos
// cut short after the id and nonce (the general waits for the rest). ready is closed once 2*MaxHandshakes connections per address
// have sent theirs.
func HelloFlood(addrs []string, claim byzantine.ID, k int) (ready <-chan struct{}, stop func()) {
	return flood(addrs, k, 2*tcp.MaxHandshakes*len(addrs), func(i int, c net.Conn) {
		nonce := make([]byte, 32)
		rand.Read(nonce)
		hello := append(binary.BigEndian.AppendUint16([]byte{1}, uint16(claim)), nonce...)
		switch i % 4 {
		case 0, 1:
			tcp.WriteFrame(c, hello)
		case 2:
			sig := make([]byte, ed25519.SignatureSize)
			rand.Read(sig)
			tcp.WriteFrame(c, append(hello, sig...))
		default:
			c.Write(append(binary.BigEndian.AppendUint32(nil, helloSize), hello...))
		}
	})
}

// flood keeps k strangers connecting to addrs, each calling send on its
// connection (when not nil: then with its number i, and it pauses 2 ms
// after each connection) and holding it until it is closed. ready is
// closed once min connections were made.
func flood(addrs []string, k, min int, send func(i int, c net.Conn)) (ready <-chan struct{}, stop func()) {
	done, rdy := make(chan struct{}), make(chan struct{})
	var made atomic.Int64
	var once sync.Once
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
				if send != nil {
					send(i, c)
				}
				if made.Add(1) >= int64(min) {
					once.Do(func() { close(rdy) })
				}
				stopRead := context.AfterFunc(contextOf(done), func() { c.Close() })
				for {
					if _, err := c.Read(buf); err != nil {
						break // the general evicted it
					}
				}
				stopRead()
				c.Close()
				if send != nil {
					select {
					case <-done:
						return
					case <-time.After(2 * time.Millisecond):
					}
				}
			}
		})
	}
	return rdy, func() {
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

// Run runs sc once over real Nodes on loopback and returns every
// general's result (the entries of traitors and absent generals are
// zero).
func Run(t testing.TB, sc Scenario) []byzantine.GeneralResult {
	t.Helper()
	g := Place(t, sc)
	keys, nodes, addrs, c := g.Keys, g.Nodes, g.Addrs, g.Cluster
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = sc.Algorithm, sc.N, sc.M
	cfg.Order = byzantine.Attack
	cfg.RoundTimeout = sc.Round
	start := time.Now().Add(max(time.Second, sc.Round))
	run := tcp.RunID(c, tcp.TermsOf(cfg, start))
	g.ServeDeaf(run)
	var loyal []string // the flooded generals
	for i, nd := range nodes {
		_, ok := sc.Traitor(byzantine.ID(i))
		if !ok && nd != nil && (len(sc.Flooded) == 0 || slices.Contains(sc.Flooded, byzantine.ID(i))) {
			loyal = append(loyal, addrs[i])
		}
	}
	if sc.Flood > 0 && len(loyal) > 0 {
		if sc.Hellos {
			// The strangers' connections wait in the listen backlogs
			// ahead of the loyal dials.
			ready, stop := HelloFlood(loyal, 0, sc.Flood)
			defer stop()
			select {
			case <-ready:
			case <-t.Context().Done():
			}
		} else {
			stop := ConnFlood(loyal, sc.Flood)
			defer stop()
		}
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
		tr, isTraitor := sc.Traitor(byzantine.ID(i))
		if !isTraitor && slices.Contains(sc.Resets, byzantine.ID(i)) {
			wg.Go(func() {
				lcfg := cfg
				lcfg.RunID = run
				g, err := byzantine.NewGeneral(lcfg, byzantine.ID(i), byzantine.Keyring{Private: keys[i], Public: PublicKeys(keys)})
				if err == nil {
					res[i], err = tcp.RunOver(ctx, nd, g, resetter{Node: nd, m: sc.M}, c, lcfg, start, nil)
				}
				errs[i] = err
			})
			continue
		}
		if !isTraitor {
			wg.Go(func() { res[i], _, errs[i] = tcp.RunNode(ctx, nd, cfg, keys[i], c, start) })
			continue
		}
		wg.Go(func() {
			tcfg := cfg
			tcfg.RunID = run
			if tr.Strategy != "" {
				tcfg.Faulty = []byzantine.Traitor{{ID: tr.ID, Strategy: tr.Strategy}}
			}
			g, err := byzantine.NewGeneral(tcfg, tr.ID, byzantine.Keyring{Private: keys[i], Public: PublicKeys(keys)})
			if err != nil {
				errs[i] = err
				return
			}
			tstart := start
			if tr.Attack == Ahead {
				tstart = start.Add(-sc.Round)
			}
			ep, stop := WrapOnSchedule(nd, tr, run, sc.N, start, sc.Round, sc.Seed)
			tcp.RunOver(ctx, nd, g, ep, c, tcfg, tstart, nil)
			stop()
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

// resetter is a loyal general's endpoint whose connections the network
// resets just after each round's marker is queued, up to round m.
type resetter struct {
	*tcp.Node
	m int
}

func (e resetter) EndRound(ctx context.Context, r int) error {
	err := e.Node.EndRound(ctx, r)
	if r <= e.m {
		e.ResetLinks()
	}
	return err
}

// StallListener listens on a free loopback port, accepts connections and
// never answers on them (StallHandshakes), until the test ends; it
// returns the address.
func StallListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// DeafListener is a StopReading traitor: it listens as one general,
// completes the handshake of whoever dials it, and then reads nothing. It
// binds its port first (the run id covers every address) and serves once
// the run id is known.
type DeafListener struct {
	t    testing.TB
	id   byzantine.ID
	priv ed25519.PrivateKey
	ln   net.Listener
}

// NewDeafListener binds a free loopback port for general id with key priv.
func NewDeafListener(t testing.TB, id byzantine.ID, priv ed25519.PrivateKey) *DeafListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &DeafListener{t: t, id: id, priv: priv, ln: ln}
}

// Addr returns the address it listens on.
func (d *DeafListener) Addr() string { return d.ln.Addr().String() }

// Serve answers the handshakes of run until the test ends.
func (d *DeafListener) Serve(run byzantine.RunID) {
	var mu sync.Mutex
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := d.ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn)
			mu.Unlock()
			go tcp.AnswerHandshake(conn, d.id, d.priv, run) // then nothing more is read
		}
	}()
	d.t.Cleanup(func() {
		d.ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
}

// Verdict is what Check concluded of one run.
type Verdict int

// The verdicts.
const (
	// Checked: IC1 and IC2 were checked (and any violation reported).
	Checked Verdict = iota
	// Inconclusive: a loyal general was out of time, or more than m
	// generals were faulty: there was nothing to check.
	Inconclusive
)

// Check checks one run's results: when no loyal general was out of time
// and at most m generals were faulty (the traitors, the absent, and every
// peer a loyal general saw fail), IC1 and IC2 must hold among the loyal
// generals; every visible traitor and absent general must be among the
// faults its victims report, whatever the verdict. Violations are
// reported with t.Errorf; a loyal general counted faulty is logged, except
// under a hello flood (Hellos), where keyless strangers must cost no loyal
// link: when no loyal general ran out of time, a loyal general counted
// faulty is then an error, and so is a loyal general that saw at most m
// faults but decided against a loyal commander, whatever the verdict.
func Check(t testing.TB, sc Scenario, res []byzantine.GeneralResult) Verdict {
	t.Helper()
	faulty := slices.Clone(sc.Absent)
	for _, tr := range sc.Traitors {
		faulty = append(faulty, tr.ID)
	}
	isLoyal := func(id byzantine.ID) bool { return !slices.Contains(faulty, id) }
	union := slices.Clone(faulty)
	// kept: no loyal general ran out of time (a test process too loaded
	// to keep the schedule makes loyal generals late by itself).
	kept := !slices.ContainsFunc(res, func(r byzantine.GeneralResult) bool { return len(r.Overran) > 0 })
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
			switch {
			case isLoyal(p) && sc.Hellos && kept:
				// Keyless strangers must cost no loyal link: this is
				// checked even when the run is otherwise inconclusive.
				t.Errorf("%v: general %d counts loyal general %d as faulty under a keyless stranger's hello flood (%+v)", sc, i, p, r.Faults)
			case isLoyal(p) && slices.Contains(sc.Resets, p) && kept:
				// A link that resets and comes back in time is no fault.
				t.Errorf("%v: general %d counts loyal general %d, whose links were reset, as faulty (%+v)", sc, i, p, r.Faults)
			case isLoyal(p):
				t.Logf("%v: general %d counts loyal general %d as faulty (%+v)", sc, i, p, r.Faults)
			}
		}
		if sc.Hellos && kept && isLoyal(0) && i != 0 && len(r.FaultyPeers()) <= sc.M && r.Decision != byzantine.Attack {
			t.Errorf("%v: general %d (loyal, saw faults %v, would exit 0) decided %s against the loyal commander's attack", sc, i, r.FaultyPeers(), r.Decision)
		}
		for _, tr := range sc.Traitors {
			victim := (tr.Attack != WithholdMarkers && tr.Attack != Split) || slices.Contains(tr.Victims, id)
			if tr.Attack.Visible() && victim && !slices.Contains(r.FaultyPeers(), tr.ID) {
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
		return Inconclusive
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
	return Checked
}

// LightRound is the round timeout of the small scenarios: long enough
// that a scheduling pause of the loaded test process (all generals share
// it) rarely reaches the pause watcher's threshold, a sixteenth of it.
func LightRound() time.Duration {
	if RaceEnabled {
		return time.Second
	}
	return 750 * time.Millisecond
}

// Fixed returns the attacks that broke the runtime before, as the review
// that found them ran them.
func Fixed() []Scenario {
	heavy := 2 * time.Second // OM(4) with 13 generals: 130,000 messages in round 4
	if RaceEnabled {
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
		{Name: "absent-om", Algorithm: byzantine.OM, N: 7, M: 2, Round: LightRound(), Absent: []byzantine.ID{4}},
		{Name: "absent-sm", Algorithm: byzantine.SM, N: 5, M: 2, Round: LightRound(), Absent: []byzantine.ID{0},
			Traitors: []TraitorSpec{{ID: 2, Attack: Lie, Strategy: byzantine.TwoFaced}}},
		// A traitor never answers handshakes (round 0 began only after
		// every dial returned, and the lieutenants decided retreat).
		{Name: "stall-om", Algorithm: byzantine.OM, N: 4, M: 1, Round: LightRound(),
			Traitors: []TraitorSpec{{ID: 3, Attack: StallHandshakes}}},
		{Name: "stall-sm", Algorithm: byzantine.SM, N: 4, M: 2, Round: LightRound(),
			Traitors: []TraitorSpec{{ID: 3, Attack: StallHandshakes}, {ID: 1, Attack: Lie, Strategy: byzantine.FlipOrders}}},
		// A stranger's connection flood (it cut loyal links for the run).
		{Name: "flood", Algorithm: byzantine.OM, N: 4, M: 1, Round: LightRound(), Flood: 400,
			Traitors: []TraitorSpec{{ID: 2, Attack: Lie, Strategy: byzantine.TwoFaced}}},
		// A stranger without a key floods one lieutenant with hellos
		// (an unsigned hello kept its connection from eviction: the
		// flood held every handshake slot, the commander's link came up
		// after round 0, and with the traitor's flipped relay a loyal
		// lieutenant that saw no fault decided retreat).
		{Name: "hello-flood", Algorithm: byzantine.OM, N: 4, M: 1, Round: LightRound(), Flood: 300,
			Hellos: true, Flooded: []byzantine.ID{3},
			Traitors: []TraitorSpec{{ID: 2, Attack: Lie, Strategy: byzantine.FlipOrders}}},
	}
}

// halfOf draws half of the generals 0..n-1 other than self.
func halfOf(rng *mrand.Rand, n int, self byzantine.ID) []byzantine.ID {
	var others []byzantine.ID
	for _, i := range rng.Perm(n) {
		if byzantine.ID(i) != self {
			others = append(others, byzantine.ID(i))
		}
	}
	half := others[:len(others)/2]
	slices.Sort(half)
	return half
}

// Timing returns the fixed attacks of traitors who control when their
// frames arrive: at the last moment of every round, early to half the
// generals and late to the others, and at a different moment on every
// link and round, beside liars.
func Timing() []Scenario {
	return []Scenario{
		{Name: "split-sm", Algorithm: byzantine.SM, N: 5, M: 2, Round: LightRound(),
			Traitors: []TraitorSpec{{ID: 0, Attack: Split, Strategy: byzantine.TwoFaced, Victims: []byzantine.ID{2, 4}},
				{ID: 3, Attack: LastMoment, Strategy: byzantine.FlipOrders}}},
		{Name: "split-reorder-om", Algorithm: byzantine.OM, N: 7, M: 2, Round: LightRound(), Seed: 7,
			Traitors: []TraitorSpec{{ID: 2, Attack: Split, Strategy: byzantine.FlipOrders, Victims: []byzantine.ID{1, 3, 5}},
				{ID: 5, Attack: Reorder, Strategy: byzantine.RandomOrders}}},
	}
}

// Random draws a scenario from rng: OM or SM, m from 1 to 4 (OM
// up to 2, to keep the run short), up to m traitors each with an attack
// and a lie.
func Random(rng *mrand.Rand) Scenario {
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
	attacks := []Attack{Lie, WithholdMarkers, StallHandshakes, StopReading, Reset, Replay, Ahead, LastMoment, Split, Reorder}
	lies := []byzantine.Strategy{"", byzantine.FlipOrders, byzantine.TwoFaced, byzantine.RandomOrders}
	sc := Scenario{Algorithm: alg, N: n, M: m, Round: LightRound(), Seed: rng.Uint64()}
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
			tr.From = rng.IntN(m)
		case Split:
			tr.Victims = halfOf(rng, n, tr.ID)
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
