package byzantine_test

import (
	"fmt"
	"testing"

	"dlm/byzantine"
	"dlm/byzantine/conformance"
)

// benchRun runs cfg b.N times and reports messages, messages per second
// and signature work per run.
func benchRun(b *testing.B, cfg byzantine.Config) {
	b.Helper()
	b.ReportAllocs()
	var res *byzantine.Result
	for b.Loop() {
		var err error
		res, err = byzantine.Run(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := res.Verify(); err != nil {
		b.Fatal(err)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(res.Messages), "msgs/op")
	b.ReportMetric(float64(res.Messages)/sec, "msgs/s")
	if d := res.Faults["duplicate"]; d > 0 {
		b.ReportMetric(float64(d), "dups/op")
	}
	if cfg.Algorithm == byzantine.SM {
		b.ReportMetric(float64(res.SignaturesMade), "signs/op")
		b.ReportMetric(float64(res.SignaturesVerified), "verifies/op")
	}
}

// BenchmarkOM: OM(m) in memory, all loyal, up to n=16, m=5 (3,999,675
// messages, B6).
func BenchmarkOM(b *testing.B) {
	for _, c := range []struct{ n, m int }{{4, 1}, {7, 2}, {10, 3}, {13, 4}, {16, 5}} {
		b.Run(fmt.Sprintf("n=%d/m=%d", c.n, c.m), func(b *testing.B) {
			benchRun(b, config(byzantine.OM, c.n, c.m))
		})
	}
}

// BenchmarkOMTraitors: OM(4) with n=13 and four colluding traitors, the
// commander among them.
func BenchmarkOMTraitors(b *testing.B) {
	cfg := config(byzantine.OM, 13, 4,
		byzantine.Traitor{ID: 0, Strategy: byzantine.Colluding}, byzantine.Traitor{ID: 3, Strategy: byzantine.Colluding},
		byzantine.Traitor{ID: 7, Strategy: byzantine.TwoFaced}, byzantine.Traitor{ID: 11, Strategy: byzantine.RandomOrders})
	benchRun(b, cfg)
}

// BenchmarkSM: SM(m) in memory up to n=16, loyal and with an equivocating
// commander plus m-1 traitorous lieutenants (more distinct chains).
func BenchmarkSM(b *testing.B) {
	for _, c := range []struct{ n, m int }{{4, 1}, {7, 2}, {10, 3}, {16, 3}, {16, 5}} {
		b.Run(fmt.Sprintf("n=%d/m=%d/loyal", c.n, c.m), func(b *testing.B) {
			benchRun(b, config(byzantine.SM, c.n, c.m))
		})
		b.Run(fmt.Sprintf("n=%d/m=%d/traitors", c.n, c.m), func(b *testing.B) {
			faulty := []byzantine.Traitor{{ID: 0, Strategy: byzantine.TwoFaced}}
			for i := 1; i < c.m; i++ {
				faulty = append(faulty, byzantine.Traitor{ID: byzantine.ID(i), Strategy: byzantine.Colluding})
			}
			benchRun(b, config(byzantine.SM, c.n, c.m, faulty...))
		})
	}
}

// BenchmarkSMDuplicates: the transport duplicates half the messages; the
// verification work stays that of the distinct chains (compare verifies/op
// with BenchmarkSM n=16/m=3/traitors).
func BenchmarkSMDuplicates(b *testing.B) {
	faulty := []byzantine.Traitor{{ID: 0, Strategy: byzantine.TwoFaced}, {ID: 1, Strategy: byzantine.Colluding}, {ID: 2, Strategy: byzantine.Colluding}}
	cfg := config(byzantine.SM, 16, 3, faulty...)
	cfg.Faults.Duplicate = 0.5
	benchRun(b, cfg)
}

// BenchmarkTransportMemory runs the shared transport benchmark bodies over
// the in-memory transport (package tcp runs them over TCP).
func BenchmarkTransportMemory(b *testing.B) { conformance.Benchmark(b, byzantine.Run) }
