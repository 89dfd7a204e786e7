package election_test

import (
	"context"
	"testing"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Over real redis-server nodes without persistence, with the numbers of
// the reported failure: 3 nodes, ttl 500ms, three elections, a rolling restart (each
// node down ttl+ttl/4+100ms), one more election. Failed before the restart
// repair: terms [1 2 3 1] on both adapters. Observe, polling throughout,
// reports the new leader without an error.
func TestTermsAcrossRollingRestartOverRedis(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			cl := redlocktest.Start(t, 3)
			client := dialRedis(t, a.dial, cl.URLs(), restartTTL)
			e, err := election.New(client, "db")
			if err != nil {
				t.Fatal(err)
			}
			var terms []uint64
			for _, id := range []string{"a", "b", "c"} {
				terms = append(terms, elect(t, e, id))
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			obs, err := election.New(client, "db", election.WithPollInterval(20*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			changes := obs.Observe(ctx)
			for _, s := range cl.Servers {
				s.Restart(restartDown)
			}
			d, err := e.Campaign(t.Context(), "d")
			if err != nil {
				t.Fatal(err)
			}
			terms = append(terms, d.Term())
			increasing(t, terms)
			for c := range changes {
				if c.Err != nil {
					t.Errorf("Observe: %+v: %v", c.Leader, c.Err)
				}
				if c.Leader.ID == "d" {
					if c.Leader.Term != d.Term() {
						t.Errorf("Observe: d with term %d, want %d", c.Leader.Term, d.Term())
					}
					break
				}
			}
			cancel()
			for range changes {
			}
			if err := d.Resign(t.Context()); err != nil && !expiredBefore(d, err) {
				t.Fatal(err)
			}
			terms = append(terms, elect(t, e, "e"))
			increasing(t, terms)
			// The repair left its floor key (the fence prefix itself) on a
			// quorum: each restarted node that took part in d's election.
			floors := 0
			for _, s := range cl.Servers {
				if v, err := s.Client().Get(t.Context(), redlock.DefaultFencePrefix).Result(); err == nil && v != "" {
					floors++
				}
			}
			if floors < 2 {
				t.Errorf("floor key %q on %d of 3 nodes, want a quorum", redlock.DefaultFencePrefix, floors)
			}
		})
	}
}
