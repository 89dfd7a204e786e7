package tcptest_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
	"dlm/byzantine/tcp/tcptest"
)

// TestFlappingListener: a traitor (general 3 of OM(1), n=4) that sends
// nothing completes every handshake of the loyal generals' dials as a
// general that took nothing and resets the connection at once. It is one
// fault, within m: the loyal generals must decide, keep the schedule and
// name it (onTime: a run in which the machine did not run this process is
// made again).
func TestFlappingListener(t *testing.T) {
	const n, m, traitor = 4, 1, 3
	round := timedRound()
	keys := tcptest.NewKeys(t, n)
	var (
		res                []byzantine.GeneralResult
		accepted, answered atomic.Int64
		el                 time.Duration
	)
	onTime(t, round, func() (late bool) {
		nodes := tcptest.ListenAll(t, keys, traitor)
		tln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c := tcptest.ClusterOf(append(tcptest.Addrs(nodes), tln.Addr().String()), keys)
		cfg := byzantine.DefaultConfig()
		cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = byzantine.OM, n, m
		cfg.Order = byzantine.Attack
		cfg.RoundTimeout = round
		start := time.Now().Add(time.Second)
		run := tcp.RunID(c, tcp.TermsOf(cfg, start))
		accepted.Store(0)
		answered.Store(0)
		var tw sync.WaitGroup
		tw.Go(func() {
			for {
				conn, err := tln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				tw.Go(func() {
					if _, err := tcp.AnswerHandshake(conn, traitor, keys[traitor], run); err == nil {
						answered.Add(1)
					}
					conn.(*net.TCPConn).SetLinger(0)
					conn.Close()
				})
			}
		})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		res = make([]byzantine.GeneralResult, traitor)
		var wg sync.WaitGroup
		t0 := time.Now()
		for i := range traitor {
			wg.Go(func() { res[i], _, _ = tcp.RunNode(ctx, nodes[i], cfg, keys[i], c, start) })
		}
		wg.Wait()
		el = time.Since(t0)
		tln.Close()
		tw.Wait()
		return slices.ContainsFunc(res, func(r byzantine.GeneralResult) bool { return len(r.Overran) > 0 })
	})
	t.Logf("traitor accepted %d connections, answered %d handshakes in %v (%.0f/s)", accepted.Load(), answered.Load(), el, float64(accepted.Load())/el.Seconds())
	// Each loyal dialer pauses after every link that broke at once, the
	// pauses doubling up to an eighth of a round: a few dials to start,
	// then about 8 a round. A bound of 16 a round, with 16 more to start,
	// holds on a loaded machine and fails for unpaced redials (1,000 a
	// second and more) and for a fixed pause of 20 ms (about 120 a second
	// for the three dialers here).
	if most := int64(traitor) * (16*int64(el/round) + 32); accepted.Load() > most {
		t.Errorf("the loyal generals dialled the traitor %d times in %v, want at most %d: redials after a link that broke at once must back off", accepted.Load(), el, most)
	}
	for i := range traitor {
		t.Logf("general %d: decision %s overran %v faults %v", i, res[i].Decision, res[i].Overran, res[i].Faults)
		if res[i].Decision != byzantine.Attack {
			t.Errorf("loyal general %d decided %s against the loyal commander's attack", i, res[i].Decision)
		}
		if len(res[i].Overran) > 0 {
			t.Errorf("loyal general %d (one traitor, m=%d) says it ran out of time in rounds %v", i, m, res[i].Overran)
		}
		checkOnlyFault(t, i, res[i].Faults, traitor)
	}
}
