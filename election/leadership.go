package election

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"dlm/redlock"
)

// Proclaim publishes id as the leader's identity, keeping the term and
// the leadership (etcd's Proclaim): Leader, Status and Observe report it
// from then on, and ID returns it. id is checked as Campaign checks it.
// The record is written as at the election, on every node that holds the
// leadership's keys, and Proclaim succeeds when a quorum stored it within
// the validity; after an error, the nodes may hold either identity, so
// that Leader may find no quorum for either until a Proclaim succeeds.
// It returns an error wrapping redlock.ErrNotHeld when the leadership has
// ended.
func (l *Leadership) Proclaim(ctx context.Context, id string) error {
	if err := checkText("candidate id", id); err != nil {
		return err
	}
	l.proclaim.Lock() // one record at a time, the last one kept
	defer l.proclaim.Unlock()
	if err := l.lock.PutRecord(ctx, formatRecord(l.term, l.since, id)); err != nil {
		return fmt.Errorf("election %q: proclaim %q: %w", l.election.name, id, err)
	}
	l.mu.Lock()
	l.id = id
	l.mu.Unlock()
	return nil
}

// keepRecord starts, for the life of l, the republication of its record
// every extension period (a third of the lock's ttl), and returns l. A
// node restarted without persistence forgets the record with the lock's
// key; the lock's extensions restore the key there (redlock), and this puts
// the record back beside it, so that after a rolling restart Leader,
// Status and Observe still report the living leader instead of none. The
// record is the same one (term, since, identity): a node stores it only
// while its lock key holds the leadership's value. It ends with the
// leadership (Done).
func keepRecord(l *Leadership) *Leadership {
	period := max(l.lock.TTL()/3, time.Millisecond)
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-l.lock.Done():
				return
			case <-t.C:
			}
			l.proclaim.Lock()
			ctx, cancel := context.WithTimeout(context.Background(), period)
			// An error changes nothing: the nodes that hold the lock keep
			// the record they had, and a lost leadership closes Done.
			_ = l.lock.PutRecord(ctx, formatRecord(l.term, l.since, l.ID()))
			cancel()
			l.proclaim.Unlock()
		}
	}()
	return l
}

// Handle returns the leadership's lock as a handle (redlock.Handle), for
// another process to take the leadership over with Election.Resume, with
// the same term and without an election. The handle holds the lock's
// secret value: pass it as privately as a password. The process that gives
// it must then stop extending (exit, or close its lock client) without
// resigning, since Resign deletes the keys that the handle names.
func (l *Leadership) Handle() redlock.Handle { return l.lock.Handle() }

// Resume takes over in this process the leadership written in h
// (Leadership.Handle of a leader of this election, possibly in another
// process): it reads the leader's record for its identity and since when
// it leads, then resumes the lock (redlock.Client.Resume, with
// auto-extension without a bound, every ttl/3 of the handle's ttl). It
// returns an error wrapping ErrInvalid when h is not a handle of this
// election; the error of the record read (wrapping ErrNoQuorum, or ctx's
// error) when too few nodes answered it, leaving the leadership as it was
// (the handle stays good: call Resume again); redlock.ErrNotHeld (and the
// other errors of redlock.Client.Resume) when the leadership has ended;
// and ErrNotLeader, after resigning, only when a quorum of nodes answered
// and none of them reports the handle's term as the leader's (its record
// is missing on too many nodes, or the handle belongs to a campaign that
// was never elected).
func (e *Election) Resume(ctx context.Context, h redlock.Handle) (*Leadership, error) {
	if h.Resource != e.resource || len(h.Resources) > 1 || h.Shared {
		return nil, invalidf("handle of %q is not the leadership of election %q (resource %q)", h.Resource, e.name, e.resource)
	}
	// The record is read first: a read that cannot decide (no quorum,
	// ctx ended) must not touch a leadership that may well be genuine.
	st, err := e.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("election %q: resume of term %d: %w", e.name, h.Token, err)
	}
	l, err := e.client.Resume(ctx, h, redlock.WithAutoExtend(), redlock.WithMaxExtensions(math.MaxInt))
	if err != nil {
		return nil, fmt.Errorf("election %q: resume: %w", e.name, err)
	}
	if st.OK && st.Leader.Term == l.Token() {
		return keepRecord(&Leadership{election: e, lock: l, term: l.Token(), since: st.Since, id: st.Leader.ID}), nil
	}
	_ = l.Unlock(context.WithoutCancel(ctx))
	return nil, fmt.Errorf("election %q: resume of term %d: %w (the nodes report %s)", e.name, l.Token(), ErrNotLeader, describe(st))
}

// describe says what a status read found, for an error.
func describe(st Status) string {
	if !st.OK {
		return fmt.Sprintf("no leader, last term %d", st.Leader.Term)
	}
	return fmt.Sprintf("leader %q of term %d", st.Leader.ID, st.Leader.Term)
}

// ErrNotLeader is returned by Resume when the nodes do not report the
// handle's term as the leader's.
var ErrNotLeader = errors.New("election: not the leader")

// Callbacks are what Run calls as the election goes, in the style of
// client-go's leader election. Each may be nil.
type Callbacks struct {
	// OnStartedLeading is called, in a goroutine of its own, each time the
	// candidate is elected, with the Leadership and a context that is
	// cancelled when the leadership ends (lost, or Run's ctx ended). It
	// should return soon after ctx is cancelled: Run waits for it.
	OnStartedLeading func(ctx context.Context, l *Leadership)
	// OnStoppedLeading is called when a leadership that OnStartedLeading
	// announced ends, with why (Leadership.Err: redlock.ErrUnlocked when
	// Run resigned because its ctx ended).
	OnStoppedLeading func(err error)
	// OnNewLeader is called, from one goroutine, with every change of
	// leader that Observe reports while Run runs, this candidate's own
	// elections included.
	OnNewLeader func(c Change)
}

// Run campaigns for the election as id and leads whenever elected, until
// ctx ends: the leadership is tied to ctx, and cancelling it resigns, so
// that another candidate is elected at once. A leadership that is lost
// (see Leadership.Done) is followed by a new campaign, for a new term. Run
// calls cb as the election goes, and returns once ctx has ended and every
// callback has returned, with an error wrapping ctx.Err(); or earlier, with
// the error of a campaign that cannot go on (ErrInvalid,
// redlock.ErrClosed).
func (e *Election) Run(ctx context.Context, id string, cb Callbacks) error {
	if err := checkText("candidate id", id); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if cb.OnNewLeader != nil {
		octx, stop := context.WithCancel(ctx)
		defer stop() // before wg.Wait
		changes := e.Observe(octx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range changes {
				cb.OnNewLeader(c)
			}
		}()
	}
	for {
		l, err := e.Campaign(ctx, id)
		if err != nil {
			return err
		}
		lctx, cancel := context.WithCancel(ctx)
		if cb.OnStartedLeading != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cb.OnStartedLeading(lctx, l)
			}()
		}
		select {
		case <-l.Done():
		case <-ctx.Done():
			_ = l.Resign(context.WithoutCancel(ctx)) // bounded by the release timeout
		}
		cancel()
		if cb.OnStoppedLeading != nil {
			cb.OnStoppedLeading(l.Err())
		}
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("election %q: run of %q: %w", e.name, id, ctx.Err())
		case errors.Is(l.Err(), redlock.ErrClosed):
			return fmt.Errorf("election %q: run of %q: %w", e.name, id, l.Err())
		}
	}
}
