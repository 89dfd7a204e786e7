package election_test

import (
	"context"
	"testing"
	"time"

	"dlm/election"
	"dlm/redlock/redlocktest"
)

// BenchmarkFailover measures, over five real redis-server nodes and each
// adapter, the time from the end of a leader to the election of the
// candidate that waited: "kill" stops the leader's process without a
// resign (its client closed: the keys stay until they expire, so the
// failover is bounded by the ttl, 1s here), "resign" gives the leadership
// up (the keys are deleted at once). Reported as ms/failover.
//
//	go test -run '^$' -bench Failover -benchtime 10x ./election/
func BenchmarkFailover(b *testing.B) {
	const ttl = time.Second
	for _, a := range adapters {
		for _, how := range []string{"kill", "resign"} {
			b.Run(a.name+"/"+how, func(b *testing.B) {
				cl := redlocktest.Start(b, 5)
				waiting := dialRedis(b, a.dial, cl.URLs(), ttl)
				ew, _ := election.New(waiting, "bench")
				ctx := context.Background()
				var total time.Duration
				for b.Loop() {
					leader := dialRedis(b, a.dial, cl.URLs(), ttl)
					el, _ := election.New(leader, "bench")
					lead, err := el.Campaign(ctx, "leader")
					if err != nil {
						b.Fatal(err)
					}
					elected := make(chan *election.Leadership, 1)
					go func() {
						l, err := ew.Campaign(ctx, "next")
						if err != nil {
							b.Error(err)
						}
						elected <- l
					}()
					// The candidate is campaigning: the leader ends.
					start := time.Now()
					if how == "kill" {
						_ = leader.Close()
					} else {
						_ = lead.Resign(ctx)
					}
					next := <-elected
					total += time.Since(start)
					if next == nil {
						return
					}
					_ = next.Resign(ctx)
					_ = leader.Close()
				}
				b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/failover")
			})
		}
	}
}
