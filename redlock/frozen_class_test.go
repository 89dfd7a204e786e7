package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// frozenEnv is one run of TestNoCallWaitsAPatienceForAFrozenNode: the
// client under test (c), a holder of locks made before any freeze
// (handles, elections), and what the run's setup left for its call.
type frozenEnv struct {
	c, holder *redlock.Client
	mems      []*redlocktest.MemNode
	lock      *redlock.Lock
	handle    redlock.Handle
	lead      *election.Leadership
}

// frozenCall is one call a client makes: setup (not timed) and the call
// (timed); freed: the healthy nodes must hold no lock key once it
// returned, and the frozen one none once it thawed.
type frozenCall struct {
	name   string
	fenced bool
	setup  func(ctx context.Context, e *frozenEnv) error
	call   func(ctx context.Context, e *frozenEnv) error
	freed  bool
}

func frozenCalls() []frozenCall {
	unlock := func(ctx context.Context, e *frozenEnv) error { return e.lock.Unlock(ctx) }
	holderLock := func(ctx context.Context, e *frozenEnv) error {
		l, err := e.holder.Lock(ctx, "r")
		if err == nil {
			e.handle = l.Handle()
		}
		return err
	}
	acquire := func(f func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error)) func(ctx context.Context, e *frozenEnv) error {
		return func(ctx context.Context, e *frozenEnv) (err error) {
			e.lock, err = f(ctx, e.c)
			return err
		}
	}
	lock := func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.Lock(ctx, "r") }
	rlock := func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.RLock(ctx, "r") }
	wlock := func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) { return c.WLock(ctx, "r") }
	all := func(ctx context.Context, c *redlock.Client) (*redlock.Lock, error) {
		return c.LockAll(ctx, []string{"r", "s"})
	}
	elect := func(ctx context.Context, c *redlock.Client) (*election.Leadership, error) {
		e, err := election.New(c, "db")
		if err != nil {
			return nil, err
		}
		return e.Campaign(ctx, "a")
	}
	return []frozenCall{
		{name: "TryLock", call: func(ctx context.Context, e *frozenEnv) (err error) { e.lock, err = e.c.TryLock(ctx, "r"); return err }},
		{name: "Lock", call: acquire(lock)},
		{name: "fenced Lock", fenced: true, call: acquire(lock)},
		{name: "RLock", call: acquire(rlock)},
		{name: "WLock", call: acquire(wlock)},
		{name: "LockAll", call: acquire(all)},
		{name: "Unlock", setup: acquire(lock), call: unlock, freed: true},
		{name: "fenced Unlock", fenced: true, setup: acquire(lock), call: unlock, freed: true},
		{name: "RLock's Unlock", setup: acquire(rlock), call: unlock, freed: true},
		{name: "WLock's Unlock", setup: acquire(wlock), call: unlock, freed: true},
		{name: "LockAll's Unlock", setup: acquire(all), call: unlock, freed: true},
		{name: "Unlock of a lock whose handle was taken", setup: func(ctx context.Context, e *frozenEnv) error {
			err := acquire(lock)(ctx, e)
			if err == nil {
				e.lock.Handle()
			}
			return err
		}, call: unlock, freed: true},
		{name: "Extend", setup: acquire(lock), call: func(ctx context.Context, e *frozenEnv) error { return e.lock.Extend(ctx) }},
		{name: "Extend of a lock whose handle was taken", setup: func(ctx context.Context, e *frozenEnv) error {
			err := acquire(lock)(ctx, e)
			if err == nil {
				e.lock.Handle()
			}
			return err
		}, call: func(ctx context.Context, e *frozenEnv) error { return e.lock.Extend(ctx) }},
		{name: "Resume", setup: holderLock, call: func(ctx context.Context, e *frozenEnv) (err error) {
			e.lock, err = e.c.Resume(ctx, e.handle)
			return err
		}},
		{name: "Release by handle", setup: holderLock, call: func(ctx context.Context, e *frozenEnv) error { return e.c.Release(ctx, e.handle) }, freed: true},
		{name: "Inspect", setup: holderLock, call: func(ctx context.Context, e *frozenEnv) error {
			_, err := e.c.Inspect(ctx, "r")
			return err
		}},
		{name: "ForceRelease", setup: holderLock, call: func(ctx context.Context, e *frozenEnv) error {
			_, err := e.c.ForceRelease(ctx, "r")
			return err
		}, freed: true},
		{name: "Campaign", fenced: true, call: func(ctx context.Context, e *frozenEnv) (err error) { e.lead, err = elect(ctx, e.c); return err }},
		{name: "Resign", fenced: true, setup: func(ctx context.Context, e *frozenEnv) (err error) { e.lead, err = elect(ctx, e.c); return err },
			call: func(ctx context.Context, e *frozenEnv) error { return e.lead.Resign(ctx) }, freed: true},
		{name: "Status", fenced: true, setup: func(ctx context.Context, e *frozenEnv) (err error) { e.lead, err = elect(ctx, e.holder); return err },
			call: func(ctx context.Context, e *frozenEnv) error {
				el, err := election.New(e.c, "db")
				if err != nil {
					return err
				}
				st, err := el.Status(ctx)
				if err == nil && !st.OK {
					err = fmt.Errorf("no leader, where a leads")
				}
				return err
			}},
		{name: "Leader", fenced: true, setup: func(ctx context.Context, e *frozenEnv) (err error) { e.lead, err = elect(ctx, e.holder); return err },
			call: func(ctx context.Context, e *frozenEnv) error {
				el, err := election.New(e.c, "db")
				if err != nil {
					return err
				}
				l, ok, err := el.Leader(ctx)
				if err == nil && (!ok || l.ID != "a") {
					err = fmt.Errorf("leader %v, %v, where a leads", l, ok)
				}
				if errors.Is(err, election.ErrNoQuorum) && !recordOnBoth(ctx, e.mems[0], e.mems[1]) {
					// The campaign's fenced raise and record write end
					// at their quorum: one of them may have landed on m3
					// and one healthy node only, the other never sent
					// (about 1 run in 60 under -race). m3 frozen, the
					// answers then cannot rule a out: ErrNoQuorum is
					// what Leader promises; the bound still holds.
					return nil
				}
				return err
			}},
		{name: "Locks", setup: holderLock, call: func(ctx context.Context, e *frozenEnv) error {
			infos, _, err := e.c.Locks(ctx, 0)
			if errors.Is(err, redlock.ErrScanIncomplete) && !e.mems[2].Frozen() {
				return err
			}
			var held []string
			for _, in := range infos {
				if in.Mode == redlock.ModeWrite {
					held = append(held, in.Resource)
				}
			}
			if fmt.Sprint(held) != "[r]" {
				return fmt.Errorf("Locks = %v held, want [r]", held)
			}
			return nil
		}},
		{name: "Close", setup: acquire(lock), call: func(ctx context.Context, e *frozenEnv) error { return e.c.Close() }},
	}
}

// One node of three frozen (a SIGSTOPped redis-server), the two others
// healthy and fast: a quorum is there. Every call a client makes completes
// within a bound well under a grant's patience (ttl/2 - drift, 4.898 s at
// ttl 10 s), and a release frees the healthy nodes, and m3 once it thawed
// and ran what it was sent. The clients: a new one
// (every dlm command); a long-lived one that met every node; a long-lived
// one whose m3 froze before it was made, so that it never met m3 (it
// locked and unlocked for longer than a grant's patience first); and one
// whose m3, frozen at its start, thawed at 6 s (its first requests to m3
// were held until then). The freeze is before the call's setup (its lock
// taken) or after it; the thawed client's m3 thaws after the setup
// ("before") or before it ("after"), and answers the call: a release
// must then free m3 too. (Its held requests answered late at the thaw:
// m3 is slow and answering for a ttl, and a call over m3 frozen again
// then would rightly wait for it.) The bound: the node timeout's limit (1 s here: what a fan waits
// for a node that is not slow), the release timeout (1 s: what a release
// marker or a release waits for such a node past its quorum), and a few
// node timeouts. A step waits past its quorum only for a node it needs or
// that is slow and answering, never a patience for a node that never
// answered.
func TestNoCallWaitsAPatienceForAFrozenNode(t *testing.T) {
	const (
		ttl   = 10 * time.Second
		bound = 2*time.Second + 4*redlock.DefaultNodeTimeout
	)
	for _, life := range []frozenLife{newClient, longLived, neverMet, thawed} {
		for _, when := range []string{"before", "after"} {
			for _, fc := range frozenCalls() {
				t.Run(fmt.Sprintf("%s/frozen %s its lock/%s", life, when, fc.name), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						frozenCallRun(t, life, when == "before", fc, ttl, bound)
					})
				})
			}
		}
	}
}

// frozenLife is what the client of a frozenCallRun lived before its call.
type frozenLife string

const (
	newClient frozenLife = "new client"
	longLived frozenLife = "long-lived client"
	neverMet  frozenLife = "long-lived client that never met m3"
	thawed    frozenLife = "client whose m3 thawed"
)

func frozenCallRun(t *testing.T, life frozenLife, before bool, fc frozenCall, ttl, bound time.Duration) {
	ctx := t.Context()
	nodes, mems := redlocktest.NewMemNodes(3)
	for i, m := range mems {
		nodes[i] = m.WithFloor()
	}
	defer mems[2].Thaw()
	opts := []redlock.Option{redlock.WithTTL(ttl)}
	if fc.fenced {
		opts = append(opts, redlock.WithFencing())
	}
	holder, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if life == neverMet || life == thawed || life == newClient && before {
		mems[2].Freeze()
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := &frozenEnv{c: c, holder: holder, mems: mems}
	if life != newClient {
		// It lived: locks taken, extended and released over 6 s.
		for range 3 {
			l, err := c.Lock(ctx, "warm")
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Extend(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second)
		}
		synctest.Wait()
		switch {
		case life == longLived && before:
			mems[2].Freeze()
		case life == thawed && !before:
			mems[2].Thaw()
			synctest.Wait()
		}
	}
	if fc.setup != nil {
		if err := fc.setup(ctx, e); err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	synctest.Wait()
	switch {
	case life == thawed && before:
		mems[2].Thaw()
		synctest.Wait()
	case life == thawed:
	case !before:
		mems[2].Freeze()
	}
	start := time.Now()
	err = fc.call(ctx, e)
	took := time.Since(start)
	frozen := "m3 frozen"
	if !mems[2].Frozen() {
		frozen = "m3 thawed"
	}
	if err != nil {
		t.Errorf("%s over %s, m1 and m2 healthy = %v after %v", fc.name, frozen, err, took.Round(time.Millisecond))
	}
	if took > bound {
		t.Errorf("%s over %s, m1 and m2 healthy took %v, want within %v (a grant's patience: %v)", fc.name, frozen, took.Round(time.Millisecond), bound, ttl/2-ttl/100-2*time.Millisecond)
	}
	if !fc.freed {
		return
	}
	synctest.Wait()
	// The frozen node thaws and runs what it was sent: the release
	// followed the request that set the key. (ForceRelease, whose read of
	// the frozen node did not answer, sends it the release of the values
	// the others showed.)
	mems[2].Thaw()
	synctest.Wait()
	for _, m := range mems {
		keys, err := m.Keys(context.Background(), redlock.DefaultKeyPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			t.Errorf("%s over %s returned after %v, and %s still holds %v", fc.name, frozen, took.Round(time.Millisecond), m, keys)
		}
	}
}

// recordOnBoth reports whether both nodes hold an election record.
func recordOnBoth(ctx context.Context, m1, m2 *redlocktest.MemNode) bool {
	for _, m := range []*redlocktest.MemNode{m1, m2} {
		if ks, err := m.Keys(ctx, "dlm:record:"); err != nil || len(ks) == 0 {
			return false
		}
	}
	return true
}
