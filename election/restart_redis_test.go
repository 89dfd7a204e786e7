package election_test

import (
	"testing"

	"dlm/election"
	"dlm/redlock/redlocktest"
)

// Over real redis-server nodes without persistence, with the issue's
// numbers: 3 nodes, ttl 500ms, three elections, a rolling restart (each
// node down ttl+ttl/4+100ms), one more election. Failed before the restart
// repair: terms [1 2 3 1] on both adapters.
func TestTermsAcrossRollingRestartOverRedis(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			cl := redlocktest.Start(t, 3)
			e, err := election.New(dialRedis(t, a.dial, cl.URLs(), restartTTL), "db")
			if err != nil {
				t.Fatal(err)
			}
			var terms []uint64
			for _, id := range []string{"a", "b", "c"} {
				terms = append(terms, elect(t, e, id))
			}
			for _, s := range cl.Servers {
				s.Restart(restartDown)
			}
			terms = append(terms, elect(t, e, "d"))
			increasing(t, terms)
			terms = append(terms, elect(t, e, "e"))
			increasing(t, terms)
		})
	}
}
