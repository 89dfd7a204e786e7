package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A second acquisition with the value of a holder (a job's re-run that
// repeats its job id, dlm acquire --value-env) must leave that holder's
// lock alone, even where the nodes' answers to it are lost: a node that
// applied the request but answered too late to count (here it answers
// after the attempt gave up on it) may hold the holder's key, and a
// release by value cannot tell that key from the attempt's own. The
// failed attempts must not release such a node, so the holder keeps its
// key on every node and the re-run is never granted while it holds.
func TestValueRerunLeavesTheHolderWhereAnswersAreLost(t *testing.T) {
	const ttl = 10 * time.Second
	for _, late := range []time.Duration{1200 * time.Millisecond, 6 * time.Second} {
		for _, wait := range []time.Duration{0, 5 * time.Second} {
			t.Run(fmt.Sprintf("answers %v late, wait %v", late, wait), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					const value = "job-4711-run-aaaaaaaaaaaaaaaa"
					nodes, mems := redlocktest.NewMemNodes(3)
					// The holder's keys live a minute, past every wait
					// here.
					first, err := redlock.New(nodes, redlock.WithTTL(time.Minute))
					if err != nil {
						t.Fatal(err)
					}
					defer first.Close()
					held, err := first.Lock(t.Context(), "deploy", redlock.WithValue(value))
					if err != nil {
						t.Fatal(err)
					}
					synctest.Wait() // the requests still on their way after the quorum land first
					mems[1].SetSlow(late)
					mems[2].SetSlow(late)
					rerun, err := redlock.New(nodes, redlock.WithTTL(ttl))
					if err != nil {
						t.Fatal(err)
					}
					defer rerun.Close()
					var got *redlock.Lock
					if wait == 0 {
						got, err = rerun.TryLock(t.Context(), "deploy", redlock.WithValue(value))
					} else {
						ctx, cancel := context.WithTimeout(t.Context(), wait)
						got, err = rerun.Lock(ctx, "deploy", redlock.WithValue(value))
						cancel()
					}
					// Every late answer and release lands within the
					// slow nodes' delay (synctest: no wall clock).
					time.Sleep(late + time.Second)
					synctest.Wait()
					holding := 0
					for _, m := range mems {
						if v, ok, _ := m.Value(context.Background(), "dlm:lock:deploy"); ok && v == value {
							holding++
						}
					}
					if got != nil || holding < 3 {
						t.Errorf("the re-run's acquisition = %v (granted: %v); afterwards %d of 3 nodes hold the first run's key, whose lock has %v of validity left", err, got != nil, holding, held.Validity().Round(time.Millisecond))
					}
				})
			})
		}
	}
}
