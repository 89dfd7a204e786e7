package tcptest_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"dlm/byzantine/tcp/tcptest"
)

var adversarySeed = flag.Uint64("adversary.seed", 1, "seed of TestAdversary's random scenarios (each run logs the seed that replays it)")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAdversary runs the fixed scenarios and a few drawn from
// -adversary.seed against real Nodes, and checks IC1, IC2 and the faults
// reported after every run. A run that was out of time or over m is
// inconclusive; too many of them fail the test, since then nothing was
// checked.
func TestAdversary(t *testing.T) {
	scs := tcptest.Fixed()
	seed := *adversarySeed
	rng := rand.New(rand.NewPCG(seed, 0xad7e))
	random := 3 // the timed attacks have their fixed cases in TestTimingTraitors
	if testing.Short() {
		random = 2
	}
	for i := range random {
		sc := tcptest.Random(rng)
		sc.Name = fmt.Sprintf("seed%d-%d", seed, i)
		scs = append(scs, sc)
	}
	var inconclusive atomic.Int64
	run := func(t *testing.T, sc tcptest.Scenario) {
		began := time.Now()
		res := tcptest.Run(t, sc)
		if tcptest.Check(t, sc, res) == tcptest.Inconclusive {
			inconclusive.Add(1)
		}
		t.Logf("%v: %v (-adversary.seed=%d)", sc, time.Since(began).Round(time.Millisecond), seed)
	}
	var waiting []tcptest.Scenario
	for _, sc := range scs {
		if waits(sc) {
			waiting = append(waiting, sc)
			continue
		}
		t.Run(sc.Name, func(t *testing.T) { run(t, sc) })
	}
	// The fixed runs that wait out their rounds (a general down or
	// stalling) use little of the machine: they run side by side.
	t.Run("waiting", func(t *testing.T) {
		for _, sc := range waiting {
			t.Run(sc.Name, func(t *testing.T) {
				t.Parallel()
				run(t, sc)
			})
		}
	})
	if n := int(inconclusive.Load()); n > len(scs)/3 {
		t.Errorf("%d of %d runs were inconclusive (out of time, or more than m faults): too few were checked", n, len(scs))
	}
}

// waits reports whether sc is a fixed, light run that waits out its
// rounds: a general down or stalling handshakes, no flood.
func waits(sc tcptest.Scenario) bool {
	if sc.Flood > 0 || sc.N > 7 || strings.HasPrefix(sc.Name, "seed") {
		return false
	}
	return len(sc.Absent) > 0 || slices.ContainsFunc(sc.Traitors, func(tr tcptest.TraitorSpec) bool { return tr.Attack == tcptest.StallHandshakes })
}
