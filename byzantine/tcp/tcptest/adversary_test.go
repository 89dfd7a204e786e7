package tcptest_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
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
	inconclusive := 0
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			began := time.Now()
			res := tcptest.Run(t, sc)
			if tcptest.Check(t, sc, res) == tcptest.Inconclusive {
				inconclusive++
			}
			t.Logf("%v: %v (-adversary.seed=%d)", sc, time.Since(began).Round(time.Millisecond), seed)
		})
	}
	if inconclusive > len(scs)/3 {
		t.Errorf("%d of %d runs were inconclusive (out of time, or more than m faults): too few were checked", inconclusive, len(scs))
	}
}
