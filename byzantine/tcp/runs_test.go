package tcp

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
)

// newKeys returns n fresh ed25519 private keys.
func newKeys(t testing.TB, n int) []ed25519.PrivateKey {
	t.Helper()
	keys := make([]ed25519.PrivateKey, n)
	for i := range keys {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = priv
	}
	return keys
}

// listenAt starts a node for general id with key priv on addr and closes it
// at the end of the test.
func listenAt(t testing.TB, addr string, id byzantine.ID, priv ed25519.PrivateKey) *Node {
	t.Helper()
	n, err := Listen(addr, id, priv, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// clusterOf lists the generals with the given addresses and keys.
func clusterOf(addrs []string, keys []ed25519.PrivateKey) Cluster {
	var c Cluster
	for i, a := range addrs {
		c.Generals = append(c.Generals, Peer{ID: byzantine.ID(i), Addr: a, PublicKey: EncodeKey(keys[i].Public().(ed25519.PublicKey))})
	}
	return c
}

// runWithOneOdd runs alg with m over n generals on loopback
// (runWithOneFault), each a Node but general odd, whose address oddAddr
// gives.
func runWithOneOdd(t *testing.T, alg byzantine.Algorithm, n, m, odd int, oddAddr func(keys []ed25519.PrivateKey) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	keys := newKeys(t, n)
	nodes := make([]*Node, n)
	addrs := make([]string, n)
	for i := range nodes {
		if i == odd {
			addrs[i] = oddAddr(keys)
			continue
		}
		nodes[i] = listenAt(t, "127.0.0.1:0", byzantine.ID(i), keys[i])
		addrs[i] = nodes[i].Addr()
	}
	runWithOneFault(ctx, t, alg, m, nodes, keys, clusterOf(addrs, keys), odd)
}

// runWithOneFault runs alg with m over nodes (nil where no Node runs),
// the loyal commander ordering attack, rounds of a second starting in half
// a second, and checks that every general but faulty decided attack and
// saw faulty alone among its faulty peers. A general that ran out of time
// is logged, not failed: the one cause left is a pause of this loaded test
// process, which runs every general.
func runWithOneFault(ctx context.Context, t *testing.T, alg byzantine.Algorithm, m int, nodes []*Node, keys []ed25519.PrivateKey, c Cluster, faulty int) {
	t.Helper()
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = alg, len(nodes), m
	cfg.Order = byzantine.Attack
	cfg.RoundTimeout = time.Second
	start := time.Now().Add(500 * time.Millisecond)
	res := runNodes(ctx, t, nodes, cfg, keys, c, start)
	for i, r := range res {
		if i == faulty {
			continue
		}
		if len(r.Overran) > 0 {
			t.Logf("general %d says it ran out of time in rounds %v (rejected %v)", i, r.Overran, r.Stats.Rejected)
		} else if i != 0 && r.Decision != byzantine.Attack {
			t.Errorf("general %d decided %s, want attack", i, r.Decision)
		}
		if got := r.FaultyPeers(); !slices.Equal(got, []byzantine.ID{byzantine.ID(faulty)}) {
			t.Errorf("general %d saw faulty peers %v (%+v), want [%d]", i, got, r.Faults, faulty)
		}
	}
}

// runNodes runs RunNode on every node of nodes (nil entries are skipped)
// concurrently and returns the results by id.
func runNodes(ctx context.Context, t *testing.T, nodes []*Node, cfg byzantine.Config, keys []ed25519.PrivateKey, c Cluster, start time.Time) []byzantine.GeneralResult {
	t.Helper()
	res := make([]byzantine.GeneralResult, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		if n == nil {
			continue
		}
		wg.Go(func() { res[i], _, errs[i] = RunNode(ctx, n, cfg, keys[i], c, start) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("general %d: %v", i, err)
		}
	}
	return res
}

// TestMixedRunsCannotSway: two runs share their key files; run A's cluster
// file points general 1 at run B's general 1. Run A's generals then reach
// B's general 1 and authenticate with the shared keys; without a run id in
// the handshake their orders replaced run B's commander's (regression: B's
// loyal general 1 decided attack while B's loyal commander ordered
// retreat). With the run bound into the handshake, B1 refuses A's
// connections and every loyal general decides its own commander's order.
func TestMixedRunsCannotSway(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	keys := newKeys(t, 4)
	cfgA := byzantine.DefaultConfig()
	cfgA.RoundTimeout = 300 * time.Millisecond
	cfgA.Order = byzantine.Attack
	cfgB := cfgA
	cfgB.Order = byzantine.Retreat

	nodesB := make([]*Node, 4)
	addrsB := make([]string, 4)
	for i := range nodesB {
		nodesB[i] = listenAt(t, "127.0.0.1:0", byzantine.ID(i), keys[i])
		addrsB[i] = nodesB[i].Addr()
	}
	clusterB := clusterOf(addrsB, keys)
	nodesA := make([]*Node, 4)
	addrsA := make([]string, 4)
	for _, i := range []int{0, 2, 3} {
		nodesA[i] = listenAt(t, "127.0.0.1:0", byzantine.ID(i), keys[i])
		addrsA[i] = nodesA[i].Addr()
	}
	addrsA[1] = addrsB[1] // the mixed entry
	clusterA := clusterOf(addrsA, keys)

	t0 := time.Now()
	startA := t0.Add(200 * time.Millisecond)
	startB := t0.Add(3 * time.Second)
	// B1 starts first and accepts; B's other generals start once run A is
	// over, so whatever A sent B1 is queued before B's own messages.
	var b1 byzantine.GeneralResult
	b1done := make(chan error, 1)
	go func() {
		var err error
		b1, _, err = RunNode(ctx, nodesB[1], cfgB, keys[1], clusterB, startB)
		b1done <- err
	}()
	resA := runNodes(ctx, t, nodesA, cfgA, keys, clusterA, startA)
	for _, i := range []int{0, 2, 3} {
		nodesA[i].Close()
	}
	others := []*Node{nodesB[0], nil, nodesB[2], nodesB[3]}
	resB := runNodes(ctx, t, others, cfgB, keys, clusterB, startB)
	if err := <-b1done; err != nil {
		t.Fatalf("general B1: %v", err)
	}
	resB[1] = b1
	for _, i := range []int{2, 3} {
		if got := resA[i].Decision; got != cfgA.Order {
			t.Errorf("run A: loyal general %d decided %s, want %s", i, got, cfgA.Order)
		}
	}
	for _, i := range []int{1, 2, 3} {
		if got := resB[i].Decision; got != cfgB.Order {
			t.Errorf("run B: loyal general %d decided %s, want %s (its loyal commander's order)", i, got, cfgB.Order)
		}
	}
}

// replayer is an Endpoint that adds, to every message of round 1 it sends,
// a chosen extra message to the same receiver: a traitorous lieutenant
// relaying an order signed in an earlier run.
type replayer struct {
	*Node
	old byzantine.Message
}

func (r replayer) Send(ctx context.Context, m byzantine.Message) error {
	if err := r.Node.Send(ctx, m); err != nil {
		return err
	}
	if m.Round != 1 {
		return nil
	}
	x := r.old
	x.From, x.To, x.Round = m.From, m.To, 1
	return r.Node.Send(ctx, x)
}

// TestReplayOfEarlierRunRejected: the same cluster (same addresses, same
// keys) and the same --seq run twice; in the second run a traitorous
// lieutenant relays the commander's signed order of the first run
// (regression: it was accepted, V = {attack, hold}, and the loyal
// lieutenants retreated while the loyal commander ordered attack). The run
// id binds the start time into every signature, so the old order is
// refused as stale.
func TestReplayOfEarlierRunRejected(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	keys := newKeys(t, 4)
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm = byzantine.SM
	cfg.RoundTimeout = 300 * time.Millisecond
	cfg.Seq = 1

	// Run 1: all loyal, the commander orders hold; lieutenant 1 records
	// what it received.
	nodes := make([]*Node, 4)
	addrs := make([]string, 4)
	for i := range nodes {
		nodes[i] = listenAt(t, "127.0.0.1:0", byzantine.ID(i), keys[i])
		addrs[i] = nodes[i].Addr()
	}
	c := clusterOf(addrs, keys)
	cfg1 := cfg
	cfg1.Order = "hold"
	cfg1.Trace = true
	start1 := time.Now().Add(time.Second)
	var old byzantine.Message
	{
		res := make([]byzantine.GeneralResult, 4)
		var trace []byzantine.TraceEvent
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Go(func() {
				var tr []byzantine.TraceEvent
				res[i], tr, errs[i] = RunNode(ctx, n, cfg1, keys[i], c, start1)
				if i == 1 {
					trace = tr
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("run 1 general %d: %v", i, err)
			}
		}
		for _, ev := range trace {
			if len(ev.Message.Path) == 1 && ev.Message.Order == "hold" {
				old = ev.Message
			}
		}
		if old.Order == "" {
			t.Fatal("run 1: lieutenant 1 recorded no signed order from the commander")
		}
		for _, n := range nodes {
			n.Close()
		}
	}
	old.Path = []byzantine.ID{0, 3}
	old.Sigs = append(old.Sigs, nil) // SM(1): the last link is unsigned

	// Run 2: same addresses, keys and seq; the commander orders attack;
	// lieutenant 3 relays the old order as well.
	for i := range nodes {
		nodes[i] = listenAt(t, addrs[i], byzantine.ID(i), keys[i])
	}
	start2 := time.Now().Add(time.Second)
	res := make([]byzantine.GeneralResult, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i, n := range nodes[:3] {
		wg.Go(func() { res[i], _, errs[i] = RunNode(ctx, n, cfg, keys[i], c, start2) })
	}
	wg.Go(func() { errs[3] = runReplayer(ctx, nodes[3], cfg, keys, c, start2, old) })
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run 2 general %d: %v", i, err)
		}
	}
	for _, i := range []int{1, 2} {
		if got := res[i].Decision; got != cfg.Order {
			t.Errorf("loyal general %d decided %s (V=%v), want %s", i, got, res[i].Values, cfg.Order)
		}
		if res[i].Stats.Rejected[byzantine.RejectStale] == 0 {
			t.Errorf("general %d rejected %v, want the replayed order counted as stale", i, res[i].Stats.Rejected)
		}
	}
}

// runReplayer runs general 3 as a lieutenant that follows SM but also
// relays old, an order signed in an earlier run.
func runReplayer(ctx context.Context, n *Node, cfg byzantine.Config, keys []ed25519.PrivateKey, c Cluster, start time.Time, old byzantine.Message) error {
	pubs, err := c.PublicKeys()
	if err != nil {
		return err
	}
	cfg.RunID = RunID(c, TermsOf(cfg, start))
	g, err := byzantine.NewGeneral(cfg, 3, byzantine.Keyring{Private: keys[3], Public: pubs})
	if err != nil {
		return err
	}
	dctx, cancel := context.WithDeadline(ctx, start.Add(cfg.RoundTimeout/4))
	err = n.Start(dctx, c, TermsOf(cfg, start))
	cancel()
	if err != nil {
		return err
	}
	_, err = byzantine.RunGeneral(ctx, g, replayer{Node: n, old: old}, start, nil)
	return err
}

// TestRunIDBindsTheCluster: one cluster entry pointing elsewhere, or any
// other term (start, seq, and every run flag two generals must agree on)
// gives another run id.
func TestRunIDBindsTheCluster(t *testing.T) {
	keys := newKeys(t, 2)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	base := clusterOf([]string{"127.0.0.1:7400", "127.0.0.1:7401"}, keys)
	moved := clusterOf([]string{"127.0.0.1:7400", "127.0.0.1:7501"}, keys)
	terms := TermsOf(byzantine.DefaultConfig(), t0)
	id := RunID(base, terms)
	if got := RunID(moved, terms); got == id {
		t.Errorf("moved entry: same run id %s", id)
	}
	for name, change := range otherTerms(t0) {
		other := terms
		change(&other)
		if got := RunID(base, other); got == id {
			t.Errorf("%s: same run id %s", name, id)
		}
	}
	if again := RunID(base, terms); again != id {
		t.Errorf("RunID is not deterministic")
	}
}

// otherTerms returns, per flag of "dlm generals node" that is a term of
// the run, a change of it.
func otherTerms(t0 time.Time) map[string]func(*Terms) {
	return map[string]func(*Terms){
		"algorithm":     func(t *Terms) { t.Algorithm = byzantine.SM },
		"traitors":      func(t *Terms) { t.MaxTraitors = 2 },
		"generals":      func(t *Terms) { t.Generals = 7 },
		"majority":      func(t *Terms) { t.Majority = byzantine.Median },
		"round-timeout": func(t *Terms) { t.RoundTimeout = 3 * time.Second },
		"interactive":   func(t *Terms) { t.Interactive = true },
		"start":         func(t *Terms) { t.Start = t0.Add(time.Millisecond) },
		"seq":           func(t *Terms) { t.Seq = 2 },
		"command":       func(t *Terms) { t.Use = "clock" },
	}
}

// TestOtherTermsRefusedAndNamed: two generals with the same keys and
// cluster but one term apart refuse each other's handshakes, and each
// names the flag that differs with both values (regression: the run flags
// were not bound into the run id, so generals started with another -m,
// --algorithm, --majority or --interactive ran together and computed
// different things, every process exiting 0).
func TestOtherTermsRefusedAndNamed(t *testing.T) {
	t0 := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	ours := TermsOf(byzantine.DefaultConfig(), t0)
	for name, change := range otherTerms(t0) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			keys := newKeys(t, 2)
			n0 := listenAt(t, "127.0.0.1:0", 0, keys[0])
			n1 := listenAt(t, "127.0.0.1:0", 1, keys[1])
			c := clusterOf([]string{n0.Addr(), n1.Addr()}, keys)
			theirs := ours
			change(&theirs)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			errc := make(chan error, 2)
			go func() { errc <- n0.Start(ctx, c, ours) }()
			go func() { errc <- n1.Start(ctx, c, theirs) }()
			waitFor(t, 20*time.Second, func() bool { return len(n0.OtherTerms()[1]) > 0 && len(n1.OtherTerms()[0]) > 0 })
			cancel()
			for range 2 {
				if err := <-errc; err == nil {
					t.Errorf("Start = nil: a link came up with a general of other terms")
				}
			}
			for _, x := range []struct {
				n        *Node
				peer     byzantine.ID
				them, us Terms
			}{{n0, 1, theirs, ours}, {n1, 0, ours, theirs}} {
				want := Diff(x.them, x.us)
				if len(want) != 1 || want[0].Name != name {
					t.Fatalf("Diff = %v, want one difference in %s", want, name)
				}
				if got := x.n.OtherTerms()[x.peer]; !slices.Equal(got, want) {
					t.Errorf("general %d: OtherTerms()[%d] = %v, want %v", x.n.id, x.peer, got, want)
				}
				if x.n.Linked(x.peer) {
					t.Errorf("general %d is linked to %d, which runs with other terms", x.n.id, x.peer)
				}
			}
		})
	}
}
