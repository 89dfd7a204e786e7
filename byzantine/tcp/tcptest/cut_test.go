package tcptest_test

import (
	"context"
	"crypto/ed25519"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
	"dlm/byzantine/tcp/tcptest"
)

// cutProxy stands in front of a traitor's listener: it forwards what the
// dialers send, passes the traitor's handshake reply back and nothing
// after it (no acknowledgement reaches the dialer), and at cut resets
// every connection and stops listening.
type cutProxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, to string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, to: to}
	go p.serve()
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go io.Copy(s, c)
		go func() {
			// The reply frame: a 4-byte length and the reply.
			io.CopyN(c, s, 4+1+2+32+8+ed25519.SignatureSize)
			io.Copy(io.Discard, s)
		}()
	}
}

func (p *cutProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
	p.conns = nil
}

// TestTraitorCutsItsInboundLinks: one traitor (general 3 of OM(1), n=4)
// sends every order honestly, each frame just before its round's deadline
// (LastMoment), never acknowledges what the loyal generals send it, and
// resets their connections to it in round 1 and refuses their redials.
// Within m, the loyal generals must decide, keep the schedule and name
// the traitor: the messages it did not take are its failure, not their
// lateness. A run in which the machine did not run this process is made
// again (onTime).
func TestTraitorCutsItsInboundLinks(t *testing.T) {
	const n, m = 4, 1
	round := timedRound()
	var (
		res  []byzantine.GeneralResult
		errs []error
	)
	onTime(t, round, func() (late bool) {
		res, errs = runCutOM(t, n, m, round)
		return slices.ContainsFunc(res[:3], func(r byzantine.GeneralResult) bool { return len(r.Overran) > 0 })
	})
	for i := range 3 {
		if errs[i] != nil {
			t.Fatalf("general %d: %v", i, errs[i])
		}
		r := res[i]
		t.Logf("general %d: decision %s overran %v faults %v", i, r.Decision, r.Overran, r.Faults)
		if i > 0 && r.Decision != byzantine.Attack {
			t.Errorf("loyal general %d decided %s against the loyal commander's attack", i, r.Decision)
		}
		if len(r.Overran) > 0 {
			t.Errorf("loyal general %d (one traitor, m=%d) says it ran out of time in rounds %v", i, m, r.Overran)
		}
		checkOnlyFault(t, i, r.Faults, 3)
	}
}

// runCutOM makes one run of TestTraitorCutsItsInboundLinks: OM(m) over
// four generals, general 3 the traitor behind a cutProxy.
func runCutOM(t *testing.T, n, m int, round time.Duration) ([]byzantine.GeneralResult, []error) {
	keys, nodes, proxy, c := cutGenerals(t, n)
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = byzantine.OM, n, m
	cfg.Order = byzantine.Attack
	cfg.RoundTimeout = round
	start := time.Now().Add(time.Second)
	run := tcp.RunID(c, tcp.TermsOf(cfg, start))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cutAt := time.AfterFunc(time.Until(start.Add(round*14/10)), proxy.cut)
	defer cutAt.Stop()

	res := make([]byzantine.GeneralResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { res[i], _, errs[i] = tcp.RunNode(ctx, nodes[i], cfg, keys[i], c, start) })
	}
	wg.Go(func() {
		tcfg := cfg
		tcfg.RunID = run
		g, err := byzantine.NewGeneral(tcfg, 3, byzantine.Keyring{Private: keys[3], Public: tcptest.PublicKeys(keys)})
		if err != nil {
			errs[3] = err
			return
		}
		ep, stop := tcptest.WrapOnSchedule(nodes[3], tcptest.TraitorSpec{ID: 3, Attack: tcptest.LastMoment}, run, n, start, round, 1)
		tcp.RunOver(ctx, nodes[3], g, ep, c, tcfg, start, nil)
		stop()
	})
	wg.Wait()
	return res, errs
}

// TestTraitorCutsItsInboundLinksInteractive: the same traitor in
// interactive consistency (the run of every epoch of dlm generals
// leader|failures|clock): SM n=4 m=2 and OM n=4 m=1, one traitor
// (general 3) that sends honestly at the last moment, never acknowledges
// and cuts its inbound links in round 1. The loyal generals must decide
// the vector and keep the schedule (onTime: a run in which the machine
// did not run this process is made again).
func TestTraitorCutsItsInboundLinksInteractive(t *testing.T) {
	for _, alg := range []byzantine.Algorithm{byzantine.OM, byzantine.SM} {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			const n = 4
			m := 1
			if alg == byzantine.SM {
				m = 2
			}
			round := timedRound()
			var (
				res  []byzantine.InteractiveGeneralResult
				errs []error
			)
			onTime(t, round, func() (late bool) {
				keys, nodes, proxy, c := cutGenerals(t, n)
				cfg := byzantine.DefaultConfig()
				cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = alg, n, m
				cfg.RoundTimeout = round
				start := time.Now().Add(time.Second)
				cfg.RunID = tcp.RunID(c, tcp.InteractiveTermsOf(cfg, start))
				ic := byzantine.InteractiveConfig{Config: cfg, Values: []byzantine.Order{"v0", "v1", "v2", "v3"}}
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				cutAt := time.AfterFunc(time.Until(start.Add(round*14/10)), proxy.cut)
				defer cutAt.Stop()
				res, errs = make([]byzantine.InteractiveGeneralResult, n), make([]error, n)
				var wg sync.WaitGroup
				for i := range 3 {
					wg.Go(func() { res[i], errs[i] = tcp.RunInteractiveNode(ctx, nodes[i], ic, keys[i], c, start) })
				}
				wg.Go(func() {
					ep, stop := tcptest.WrapOnSchedule(nodes[3], tcptest.TraitorSpec{ID: 3, Attack: tcptest.LastMoment}, cfg.RunID, n, start, round, 1)
					tcp.RunInteractiveOver(ctx, nodes[3], ep, ic, byzantine.Keyring{Private: keys[3], Public: tcptest.PublicKeys(keys)}, c, start)
					stop()
				})
				wg.Wait()
				return slices.ContainsFunc(res[:3], func(r byzantine.InteractiveGeneralResult) bool { return len(r.Overran()) > 0 })
			})
			for i := range 3 {
				if errs[i] != nil {
					t.Fatalf("general %d: %v", i, errs[i])
				}
				r := res[i]
				t.Logf("general %d: vector %v overran %v faults %v", i, r.Vector, r.Overran(), r.Faults())
				if len(r.Overran()) > 0 {
					t.Errorf("loyal general %d (one traitor, m=%d) says it ran out of time in rounds %v", i, m, r.Overran())
				}
				checkOnlyFault(t, i, r.Faults(), 3)
			}
		})
	}
}

// cutGenerals places n generals on loopback, the last behind a cutProxy,
// and returns their keys, their nodes, the proxy and the cluster, which
// lists the proxy's address for the last general.
func cutGenerals(t *testing.T, n int) ([]ed25519.PrivateKey, []*tcp.Node, *cutProxy, tcp.Cluster) {
	t.Helper()
	keys := tcptest.NewKeys(t, n)
	nodes := tcptest.ListenAll(t, keys, n)
	proxy := newCutProxy(t, nodes[n-1].Addr())
	addrs := tcptest.Addrs(nodes)
	addrs[n-1] = proxy.ln.Addr().String()
	return keys, nodes, proxy, tcptest.ClusterOf(addrs, keys)
}

// timedRound is the round timeout of the tests whose traitor times its
// frames to the deadlines.
func timedRound() time.Duration {
	if tcptest.RaceEnabled {
		return 1500 * time.Millisecond // the race detector slows every general several times
	}
	return 800 * time.Millisecond
}

// checkOnlyFault fails t unless general i named traitor, and no other
// peer, among its faults.
func checkOnlyFault(t *testing.T, i int, faults []byzantine.PeerFault, traitor byzantine.ID) {
	t.Helper()
	if len(faults) != 1 || faults[0].ID != traitor {
		t.Errorf("loyal general %d names the faults %v, want general %d alone", i, faults, traitor)
	}
}

// onTime makes one run of generals over real TCP (run, which reports
// whether a loyal general said it ran out of time) with a watcher of this
// process beside it, and makes it again, up to three runs in all, while a
// loyal general ran out of time in a run in which the watcher found this
// process not run for a sixteenth of a round or longer. A general that
// was not run for that long up to a round's deadline rightly says it ran
// out of time (the pause it watches for itself), whatever the traitor
// does; a loaded machine does that, and the suite runs on one. The test
// then checks the last run: an overrun without such a pause is the
// traitor's doing, which is what these tests catch. When every run had
// one, the test is skipped as inconclusive.
func onTime(t *testing.T, round time.Duration, run func() (late bool)) {
	t.Helper()
	const runs = 3
	for try := 1; ; try++ {
		w := watchGaps(round / 64)
		late := run()
		gap := w.end()
		if !late || gap < round/16 {
			return
		}
		if try == runs {
			t.Skipf("in each of %d runs a loyal general ran out of time while this process was not run for up to %v (a loaded machine): inconclusive", runs, gap)
		}
		t.Logf("run %d: a loyal general ran out of time while this process was not run for %v (a loaded machine): run again", try, gap)
	}
}

// gapWatch is a ticker that measures the longest gap between its ticks:
// how long this process went without being run.
type gapWatch struct {
	stop    chan struct{}
	done    chan struct{}
	longest time.Duration
}

func watchGaps(tick time.Duration) *gapWatch {
	w := &gapWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tk := time.NewTicker(tick)
		defer tk.Stop()
		last := time.Now()
		for {
			select {
			case <-w.stop:
				w.longest = max(w.longest, time.Since(last))
				return
			case <-tk.C:
				now := time.Now() // not the tick's time, which is when it was due
				w.longest = max(w.longest, now.Sub(last))
				last = now
			}
		}
	}()
	return w
}

// end stops the watch and returns the longest gap.
func (w *gapWatch) end() time.Duration {
	close(w.stop)
	<-w.done
	return w.longest
}
