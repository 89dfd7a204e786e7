package tcptest_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
	"dlm/byzantine/tcp/tcptest"
)

// TestRestartBeforeRunNotGone: OM(1), four loyal generals over real
// Nodes. General 1's first process links to the others, then closes
// (a supervisor restart, or an operator who started it twice) before the
// run begins; a second process listens again on its address, links again
// before round 0 and runs on time. Its first connections closed in order
// before the run: that is no fault of the run, and "a link that comes up
// late is used from then on". Before, the others counted it gone for the
// whole run and stopped waiting for its markers (with one traitor a loyal
// general then refused its relays as late and decided wrong).
func TestRestartBeforeRunNotGone(t *testing.T) {
	const n, m = 4, 1
	keys := tcptest.NewKeys(t, n)
	nodes := tcptest.ListenAll(t, keys, n)
	c := tcptest.ClusterOf(tcptest.Addrs(nodes), keys)
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.RoundTimeout = byzantine.OM, n, m, tcptest.LightRound()
	start := time.Now().Add(3 * time.Second)
	terms := tcp.TermsOf(cfg, start)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res := make([]byzantine.GeneralResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for _, i := range []int{0, 2} {
		wg.Go(func() { res[i], _, errs[i] = tcp.RunNode(ctx, nodes[i], cfg, keys[i], c, start) })
	}
	// General 1's first process: it links to 0 and 2, and they to it,
	// then ends. (General 3 comes up last, so that no general has every
	// link, which would start its run at once, before the restart.)
	first := nodes[1]
	sctx, scancel := context.WithDeadline(ctx, start.Add(-time.Second))
	defer scancel()
	go first.Start(sctx, c, terms)
	for !(first.Linked(0) && first.Linked(2) && nodes[0].Linked(1) && nodes[2].Linked(1)) && sctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if sctx.Err() != nil {
		t.Fatal("general 1's first process did not link in time")
	}
	scancel()
	first.Close()
	again, err := tcp.Listen(c.Addr(1), 1, keys[1], 0)
	if err != nil {
		t.Fatalf("general 1 listens again: %v", err)
	}
	t.Cleanup(func() { again.Close() })
	wg.Go(func() { res[1], _, errs[1] = tcp.RunNode(ctx, again, cfg, keys[1], c, start) })
	for !(nodes[0].Linked(1) && nodes[2].Linked(1)) && time.Now().Before(start) {
		time.Sleep(10 * time.Millisecond)
	}
	wg.Go(func() { res[3], _, errs[3] = tcp.RunNode(ctx, nodes[3], cfg, keys[3], c, start) })
	wg.Wait()
	for i, r := range res {
		if errs[i] != nil {
			t.Fatalf("general %d: %v", i, errs[i])
		}
		t.Logf("general %d: decided %s, faults %+v, overran %v, rejected %v", i, r.Decision, r.Faults, r.Overran, r.Stats.Rejected)
	}
	for i, r := range res {
		if len(r.Overran) > 0 {
			t.Logf("general %d ran out of time (loaded machine?): its view proves nothing", i)
			continue
		}
		if slices.Contains(r.FaultyPeers(), 1) {
			t.Errorf("general %d counts general 1 faulty (%+v), though its second process linked before round 0 and ran on time", i, r.Faults)
		}
		if r.Decision != byzantine.Attack {
			t.Errorf("general %d decided %s, want attack", i, r.Decision)
		}
	}
}
