package tcp_test

import (
	"fmt"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// BenchmarkInteractiveEpoch measures one epoch of the uses: one
// interactive-consistency run, all generals loyal, with proposals of the
// size the uses send, in memory and over loopback TCP (every general a
// goroutine with its own key and listener; rounds end on the markers). It
// reports messages and bytes per epoch beside the time.
//
//	go test ./byzantine/tcp -run '^$' -bench InteractiveEpoch -benchtime 5x
func BenchmarkInteractiveEpoch(b *testing.B) {
	for _, tr := range []string{"memory", "tcp"} {
		for _, alg := range []struct {
			alg byzantine.Algorithm
			m   int
		}{{byzantine.OM, 1}, {byzantine.SM, 2}} {
			for _, n := range []int{4, 7, 10, 13, 16} {
				b.Run(fmt.Sprintf("%s/%s/m=%d/n=%d", tr, alg.alg, alg.m, n), func(b *testing.B) {
					cfg := byzantine.DefaultConfig()
					cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.RoundTimeout = alg.alg, n, alg.m, 5*time.Second
					ic := byzantine.InteractiveConfig{Config: cfg}
					for i := range n {
						// A proposal of the uses: candidacy, a clock in ns, a heard report.
						ic.Values = append(ic.Values, byzantine.Order(fmt.Sprintf("p1.c.%d.%0*x", 1_800_000_000_000_000_000+i, (n+3)/4, 0)))
					}
					var res *byzantine.InteractiveResult
					var err error
					for b.Loop() {
						if tr == "tcp" {
							res, err = tcp.LaunchInteractive(b.Context(), ic)
						} else {
							res, err = byzantine.RunInteractive(b.Context(), ic)
						}
						if err != nil {
							b.Fatal(err)
						}
						if err := res.Verify(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(res.Messages), "msgs/epoch")
					b.ReportMetric(float64(res.Bytes), "bytes/epoch")
				})
			}
		}
	}
}
