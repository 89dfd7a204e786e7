package election_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A lock value given in WithLockOptions (redlock.WithValue) is used once
// per campaign by the lock client, and a value used twice binds a new
// holder to the record of an earlier one: while candidate b holds the
// election's keys with a's old value, before b's record, Leader reported a
// (resigned) as leader. Campaign gives every round a value of its own.
// Failed on 314a9ee: Leader = {a 1}, true while b was mid-campaign.
func TestReviewCampaignValueNotReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		fence, record := make(chan struct{}), make(chan struct{})
		close(fence)
		held := make([]redlock.Node, len(mems))
		for i, m := range mems {
			held[i] = holdNode{m, fence, record}
		}
		value := redlock.WithValue("0123456789abcdefghijklmnop")
		reader := newElection(t, newClient(t, nodes))
		a, err := newElection(t, newClient(t, nodes), election.WithLockOptions(value)).Campaign(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		mustLeader(t, reader, true, election.Leader{ID: "a", Term: 1})
		if err := a.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := make(chan *election.Leadership, 1)
		go func() {
			b, err := newElection(t, newClient(t, held), election.WithLockOptions(value)).Campaign(t.Context(), "b")
			if err != nil {
				t.Error(err)
			}
			got <- b
		}()
		synctest.Wait() // b holds the keys with its token, its record held back
		if n := lockKeys(t, mems); n != 5 {
			t.Fatalf("%d lock keys, want b's on all 5 nodes", n)
		}
		mustLeader(t, reader, false, election.Leader{Term: 2})
		close(record)
		if b := <-got; b != nil {
			mustLeader(t, reader, true, election.Leader{ID: "b", Term: 2})
			_ = b.Resign(t.Context())
		}
	})
}

// Campaign blocks until elected or ctx ends, whatever bound on the tries
// the lock client has by default (redlock.WithTries is a client option
// too) or WithLockOptions gives. Failed on 314a9ee: b's Campaign returned
// ErrNotAcquired after 2 attempts while a led, instead of becoming leader
// when a resigned.
func TestReviewCampaignIgnoresTries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		a, err := newElection(t, newClient(t, nodes)).Campaign(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			client []redlock.Option
			opts   []election.Option
		}{
			{"client WithTries", []redlock.Option{redlock.WithTries(2)}, nil},
			{"WithLockOptions WithTries", nil, []election.Option{election.WithLockOptions(redlock.WithTries(2))}},
		} {
			got := make(chan error, 1)
			var lead *election.Leadership
			go func() {
				var err error
				lead, err = newElection(t, newClient(t, nodes, tc.client...), tc.opts...).Campaign(t.Context(), "b")
				got <- err
			}()
			time.Sleep(5 * time.Second) // fake time: many retries while a leads
			select {
			case err := <-got:
				t.Fatalf("%s: Campaign of b returned while a led: %v", tc.name, err)
			default:
			}
			if err := a.Resign(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("%s: Campaign of b after a resigned: %v", tc.name, err)
			}
			a = lead // b leads; the next case campaigns behind it
		}
		_ = a.Resign(t.Context())
	})
}

// A campaign waiting behind a leader ends with ErrClosed when its client
// closes; the leader's Leadership ends with ErrClosed when its own client
// closes; an Observe ends with its ctx. No goroutine is left (synctest).
func TestReviewCloseEndsCampaignAndLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		ca, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		cb, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		a, err := newElection(t, ca).Campaign(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		octx, stop := context.WithCancel(t.Context())
		seen := newElection(t, newClient(t, nodes)).Observe(octx)
		if ld := (<-seen).Leader; ld.ID != "a" {
			t.Fatalf("Observe: first leader %+v, want a", ld)
		}
		got := make(chan error, 1)
		go func() {
			_, err := newElection(t, cb).Campaign(t.Context(), "b")
			got <- err
		}()
		time.Sleep(3 * ttl) // fake time: a keeps the lead, b retries
		_ = cb.Close()
		if err := <-got; !errors.Is(err, redlock.ErrClosed) {
			t.Errorf("Campaign when its client closed: err = %v, want ErrClosed", err)
		}
		_ = ca.Close()
		<-a.Done()
		if !errors.Is(a.Err(), redlock.ErrClosed) {
			t.Errorf("Leadership when its client closed: Err = %v, want ErrClosed", a.Err())
		}
		stop()
		for range seen {
		}
	})
}
