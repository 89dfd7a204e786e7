package faultconn

import (
	"io"
	"testing"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// Suite is the wire-fault test of one adapter, for TestWireFaults in the
// adapter's package.
type Suite struct {
	// Seed seeds the faults and the workload; 0 draws one from the clock.
	// A failing run logs it (replay it with the test's -wire.seed flag).
	Seed uint64
	// Nodes is how many redis-server nodes the workload spreads over;
	// default 2.
	Nodes int
	// Rate of faults per call (Config.Rate); default 0.03.
	Rate float64
	// Faults are the faults drawn (Config.Faults); nil: every one.
	Faults []Fault
	// Workload of the run (its Seed is Suite.Seed's).
	Workload Workload
	// NewNode returns the adapter's node for the redis-server at addr,
	// whose connections go through in (in.Dial). The suite closes it
	// (io.Closer) at the end.
	NewNode func(t *testing.T, addr string, in *Injector) adapter.Node
	// AllowOrphans accepts Result.Orphans (an adapter that does not order
	// its requests across a replaced connection); they are logged.
	AllowOrphans bool
}

// The workload and fault rate of one fault alone in RunMatrix: a quick
// run, with the fault more often than among all of them.
var eachWorkload = Workload{Rounds: 1000, Budget: 1500 * time.Millisecond}

const eachRate = 0.1

// RunMatrix runs s as subtests: "all", every fault at once with
// s.Workload, then one quick run per fault alone, where a fault that only
// acts once a connection fails or is dialled again (StallReader,
// FailDial, ResetAfterDial, DelayWrite) comes with FailWrite. Each fault alone is
// drawn at a rate of 0.1 (s.Rate is for "all"). The per-fault runs are
// what docs/guarantees.md reports.
func (s Suite) RunMatrix(t *testing.T) {
	t.Run("all", func(t *testing.T) {
		all := s
		all.Faults = AllFaults()
		all.Run(t)
	})
	for _, f := range AllFaults() {
		t.Run(f.String(), func(t *testing.T) {
			one := s
			one.Faults = []Fault{f}
			switch f {
			case StallReader, FailDial, ResetAfterDial, DelayWrite:
				one.Faults = append(one.Faults, FailWrite)
			}
			one.Workload, one.Rate = eachWorkload, eachRate
			one.Workload.Timeout, one.Workload.TTL = s.Workload.Timeout, s.Workload.TTL
			one.Run(t)
		})
	}
}

// RunFaults runs s for the faults named in names (ParseFaults): "all"
// runs RunMatrix, any other list one Run with just those faults at s's
// rates. It is what an adapter's TestWireFaults calls with its
// -wire.faults flag.
func (s Suite) RunFaults(t *testing.T, names string) {
	t.Helper()
	if names == "" || names == "all" {
		s.RunMatrix(t)
		return
	}
	faults, err := ParseFaults(names)
	if err != nil {
		t.Fatal(err)
	}
	s.Faults = faults
	s.Run(t)
}

// Run starts the nodes, runs RunLocks over them with every fault on, and
// fails t for every violation, naming the seed.
func (s Suite) Run(t *testing.T) {
	t.Helper()
	seed := s.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("wire faults: seed %d (replay with -wire.seed=%d)", seed, seed)
		}
	})
	if s.Nodes <= 0 {
		s.Nodes = 2
	}
	if s.Rate <= 0 {
		s.Rate = 0.03
	}
	cl := redlocktest.Start(t, s.Nodes)
	targets := make([]Target, s.Nodes)
	for i, srv := range cl.Servers {
		in := New(Config{Seed: seed + uint64(i), Rate: s.Rate, Faults: s.Faults})
		t.Cleanup(in.Wait) // after NewNode's own clean-ups
		n := s.NewNode(t, srv.Addr(), in)
		t.Cleanup(func() {
			if c, ok := n.(io.Closer); ok {
				_ = c.Close()
			}
		})
		targets[i] = Target{Node: n, Injector: in, Truth: srv.Client()}
	}
	w := s.Workload
	w.Seed = seed
	res := RunLocks(t.Context(), w, targets)
	for _, tg := range targets {
		tg.Injector.SetEnabled(false)
	}
	var injected int64
	for i, tg := range targets {
		injected += tg.Injector.Injected()
		t.Logf("node %d faults: %s", i, tg.Injector)
	}
	t.Logf("rounds %d, requests %d, acquired %d, errors %d, faults %d", res.Rounds, res.Requests, res.Acquired, res.Errors, injected)
	for _, v := range res.Violations {
		t.Errorf("violation: %s", v)
	}
	for _, o := range res.Orphans {
		if s.AllowOrphans {
			t.Logf("orphan: %s", o)
		} else {
			t.Errorf("orphan: %s", o)
		}
	}
	if injected == 0 {
		t.Errorf("no fault was injected in %d rounds", res.Rounds)
	}
}
