package election_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
)

// An election's lock is fenced (two round trips to its grant) and kept by
// auto-extension, and its record is written after the grant. Over healthy
// nodes answering 3.5 s or 4 s late (ttl 10 s) a campaign either elects a
// leader that keeps its leadership, or fails saying the nodes answer too
// late for the ttl (a longer ttl); never "elected, then lost", nor every
// round given back unexplained.
func TestCampaignOverSlowNodesKeepsItsLeaderOrSaysWhy(t *testing.T) {
	for _, late := range []time.Duration{3500 * time.Millisecond, 4 * time.Second} {
		t.Run(late.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = 10 * time.Second
				nodes, mems := floorMemNodes(3)
				mems[1].SetSlow(late)
				mems[2].SetSlow(late)
				e := newElection(t, fencedClient(t, nodes, ttl))
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				start := time.Now()
				lead, err := e.Campaign(ctx, "a")
				cancel()
				if err != nil {
					if !errors.Is(err, redlock.ErrNotAcquired) || !strings.Contains(err.Error(), "longer ttl") {
						t.Errorf("nodes m2, m3 answering %v late (ttl %v): Campaign (nobody else campaigns) = %v after %v; want a leader, or ErrNotAcquired saying the nodes answer too late for the ttl (a longer ttl)",
							late, ttl, err, time.Since(start))
					}
					t.Logf("refused after %v: %v", time.Since(start), err)
					return
				}
				defer func() { _ = lead.Resign(context.Background()) }()
				elected := time.Now()
				select {
				case <-lead.Done():
					t.Errorf("nodes m2, m3 answering %v late (ttl %v): the leadership was lost %v after the election (%v after the campaign began): %v",
						late, ttl, time.Since(elected), elected.Sub(start), lead.Err())
				case <-time.After(time.Minute):
				}
			})
		})
	}
}
