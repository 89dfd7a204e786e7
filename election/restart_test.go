package election_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// restartTTL is the ttl of the rolling-restart tests, and restartDown how
// long each node stays down: past the ttl (R16.3's delayed restart, which
// keeps the lock safe without persistence), as in the reported failure.
const (
	restartTTL  = 500 * time.Millisecond
	restartDown = restartTTL + restartTTL/4 + 100*time.Millisecond
)

// elect campaigns as id and resigns, and returns the term.
func elect(t *testing.T, e *election.Election, id string) uint64 {
	t.Helper()
	l, err := e.Campaign(t.Context(), id)
	if err != nil {
		t.Fatalf("campaign of %s: %v", id, err)
	}
	// Over real servers a test process not run for longer than the
	// validity lets the leadership expire before its resign: its term
	// counts all the same.
	if err := l.Resign(t.Context()); err != nil && !expiredBefore(l, err) {
		t.Fatalf("resign of %s: %v", id, err)
	}
	return l.Term()
}

// expiredBefore tells whether err, of l's Resign, says only that l had
// expired before it.
func expiredBefore(l *election.Leadership, err error) bool {
	return errors.Is(err, redlock.ErrNotHeld) && errors.Is(l.Err(), redlock.ErrExpired)
}

// restartClient is a fenced client over nodes with the ttl of the
// rolling-restart tests.
func restartClient(t *testing.T, nodes []redlock.Node) *redlock.Client {
	t.Helper()
	return newClient(t, nodes, redlock.WithTTL(restartTTL), redlock.WithNodeTimeout(50*time.Millisecond))
}

// threeElections runs three elections and returns their terms.
func threeElections(t *testing.T, e *election.Election) []uint64 {
	t.Helper()
	var terms []uint64
	for _, id := range []string{"a", "b", "c"} {
		terms = append(terms, elect(t, e, id))
	}
	return terms
}

// roll restarts mems in turn, each down past the ttl (fake time).
func roll(mems []*redlocktest.MemNode) {
	for _, m := range mems {
		m.Restart(restartDown)
		time.Sleep(restartDown + time.Millisecond)
	}
}

// increasing fails the test unless terms strictly increase.
func increasing(t *testing.T, terms []uint64) {
	t.Helper()
	for i := 1; i < len(terms); i++ {
		if terms[i] <= terms[i-1] {
			t.Fatalf("terms %v: term %d of election %d is not above %d", terms, terms[i], i+1, terms[i-1])
		}
	}
}

// Terms do not go down across a rolling restart without persistence: three
// elections, then every node restarts in turn (each down past the ttl), then
// one more election. Failed before the restart repair (plain MemNodes, which
// lack adapter.FenceFloorNode, still do): terms [1 2 3 1].
func TestTermsAcrossRollingRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := floorMemNodes(3)
		e := newElection(t, restartClient(t, nodes))
		terms := threeElections(t, e)
		roll(mems)
		terms = append(terms, elect(t, e, "d"))
		increasing(t, terms)
		// After the repair, terms count again.
		terms = append(terms, elect(t, e, "e"))
		if got := terms[4] - terms[3]; got != 1 {
			t.Errorf("terms %v: the election after the repaired one is %d above it, want 1", terms, got)
		}
	})
}

// The class of the defect: any sequence of restarts without persistence,
// of any nodes at any moments between elections (each restart with or
// without a down time), never makes a term go down. Seeded walks over 5
// nodes; the seed is in the name of the failing subtest. Fake time must
// pass between elections (as real time does): with none at all, terms
// counted after a repair ran ahead of the unmoving clock, and a later
// repair reused one (seed 5 gave two elections the same term).
func TestTermsAcrossRandomRestarts(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 22))
				nodes, mems := floorMemNodes(5)
				e := newElection(t, restartClient(t, nodes))
				var terms []uint64
				for step := range 40 {
					for _, m := range mems {
						switch rng.IntN(6) {
						case 0:
							m.Forget()
						case 1:
							m.Restart(time.Duration(rng.Int64N(int64(2 * restartTTL))))
						}
					}
					terms = append(terms, elect(t, e, fmt.Sprintf("c%d", step)))
					// An election takes time: real ones take round trips,
					// well over the microsecond of the clock floor, so that
					// terms counted after a repair stay below the clock.
					time.Sleep(time.Millisecond)
				}
				increasing(t, terms)
			})
		})
	}
}

// Over plain MemNodes (no floor key: the protocol before the repair), the
// same rolling restart takes terms down: what the repair fixes, kept as a
// test so that the scenario keeps showing it.
func TestTermsAcrossRollingRestartWithoutRepair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		e := newElection(t, restartClient(t, nodes))
		terms := threeElections(t, e)
		roll(mems)
		terms = append(terms, elect(t, e, "d"))
		if want := []uint64{1, 2, 3, 1}; !slices.Equal(terms, want) {
			t.Errorf("terms %v without the repair, want %v", terms, want)
		}
	})
}

// Observe reports every change of (leader, term) and a term that went down
// as an error, instead of hiding it: over plain MemNodes (no repair) the
// rolling restart takes the term from 3 to 1, and the new leader is
// reported with ErrTermDecreased. Before, Observe kept only terms at least
// the last one and never reported it (15 polls in the reported failure).
func TestObserveReportsTermDecrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		client := restartClient(t, nodes)
		e := newElection(t, client)
		threeElections(t, e)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		changes := newElection(t, client, election.WithPollInterval(10*time.Millisecond)).Observe(ctx)
		if c := <-changes; c.Leader != (election.Leader{Term: 3}) || c.Err != nil {
			t.Fatalf("first change %+v, want no leader, term 3", c)
		}
		roll(mems)
		d, err := e.Campaign(t.Context(), "d")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = d.Resign(t.Context()) }()
		// Meanwhile the reads without a leader found lower terms as the
		// nodes forgot their fences: no error, and reported as term 3.
		for c := range changes {
			if c.Leader.ID != "d" {
				if c.Err != nil || c.Leader.Term != 3 {
					t.Errorf("change %+v, %v: want no leader, term 3, no error", c.Leader, c.Err)
				}
				continue
			}
			if !errors.Is(c.Err, election.ErrTermDecreased) {
				t.Errorf("change to d with term %d after term 3: Err = %v, want ErrTermDecreased", c.Leader.Term, c.Err)
			}
			return
		}
	})
}
