package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"dlm/checker"
	"dlm/election"
)

// electionName is the election of the election scenario.
const electionName = "torture"

// runElection: Config.Clients candidates (clients alternating between the
// two groups) campaign for one election for Config.Duration, each leading
// a random while and resigning, while faults drawn from Config.Faults hit
// nodes and links (crashes, pauses, partitions by default). Each campaign
// is recorded as an acquisition of the election's resource with the term as
// its token; the auto-extensions of a leadership as one Extend op from its
// election to its end, with the last validity end the leader knew; its end
// (resignation, or loss noticed through Done) as a Release op. The failover
// times are logged; CheckElection judges the history (Analyze).
func runElection(ctx context.Context, e *env) error {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Duration)
	defer cancel()
	pauses := make([]*pauseFlag, e.cfg.Clients)
	for i := range pauses {
		pauses[i] = new(pauseFlag)
	}
	var cands []*actor
	var rngs []*rand.Rand
	for i := range e.cfg.Clients {
		a, err := e.newActor(fmt.Sprintf("c%d", i), i%2)
		if err != nil {
			return err
		}
		cands = append(cands, a)
		rngs = append(rngs, rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64())))
	}
	frng := rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64()))
	done := make(chan error, 1)
	go func() { done <- e.faultSchedule(rctx, frng, pauses) }()
	errs := make([]error, len(cands))
	var crashes crashLog
	var wg sync.WaitGroup
	for i, a := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.candidate(rctx, a, i%2, rngs[i], &crashes)
		}()
	}
	wg.Wait()
	err := errors.Join(append(errs, <-done)...)
	var all, crashed []time.Duration
	for _, f := range checker.Failovers(e.rec.history()) {
		all = append(all, f.Duration())
		if crashes.has(f.From) {
			crashed = append(crashed, f.Duration())
		}
	}
	e.log("election: %s; after a leader crashed: %s (faults included)", stats(all, "failovers"), stats(crashed, "failovers"))
	return err
}

// crashLog holds the moments (run time) at which leaders crashed.
type crashLog struct {
	mu sync.Mutex
	at map[int64]bool
}

func (c *crashLog) add(t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[int64]bool{}
	}
	c.at[t] = true
}

func (c *crashLog) has(t int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[t]
}

// stats describes durations: count, mean, longest.
func stats(ds []time.Duration, what string) string {
	if len(ds) == 0 {
		return "no " + what
	}
	var total, longest time.Duration
	for _, d := range ds {
		total, longest = total+d, max(longest, d)
	}
	return fmt.Sprintf("%d %s, mean %v, longest %v", len(ds), what, (total / time.Duration(len(ds))).Round(time.Millisecond), longest.Round(time.Millisecond))
}

// candidate campaigns until ctx ends; elected, it leads for a random time
// (up to two ttl), or until it notices its loss, then resigns and waits a
// little before it campaigns again. One leadership in three ends instead
// in a crash of the leader: its client is closed without resigning (the
// keys stay until they expire), and the candidate comes back with a new
// client of group g.
func (e *env) candidate(ctx context.Context, a *actor, g int, rng *rand.Rand, crashes *crashLog) error {
	el, err := election.New(a.client, electionName)
	if err != nil {
		return fmt.Errorf("torture: candidate %s: %w", a.name, err)
	}
	resource := election.ResourcePrefix + electionName
	ttl := e.cfg.TTL
	first := a // Run closes it; the clients dialled after a crash are closed here
	defer func() {
		if a != first {
			_ = a.client.Close()
		}
	}()
	for ctx.Err() == nil {
		a.grants++
		id := fmt.Sprintf("%s#%d", a.name, a.grants)
		i := e.rec.invoke(checker.Op{Client: a.name, Resource: resource, Kind: checker.Acquire, Lock: id, TTL: int64(ttl)})
		lead, err := el.Campaign(ctx, a.name)
		var elected int64
		e.rec.complete(i, func(o *checker.Op) {
			if err != nil {
				o.Err = err.Error()
				return
			}
			o.OK, o.Token, o.Until = true, lead.Term(), e.rec.at(lead.Until())
			elected = max(e.rec.now(), o.Start)
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		t := time.NewTimer(time.Duration(rng.Int64N(int64(2 * ttl))))
		lost := false
		select {
		case <-lead.Done():
			lost = true
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		// The auto-extensions, as one op: the validity end moved to the
		// last one the leader knew.
		x := e.rec.invoke(checker.Op{Client: a.name, Resource: resource, Kind: checker.Extend, Lock: id})
		e.rec.complete(x, func(o *checker.Op) { o.Start, o.OK, o.Until = elected, true, e.rec.at(lead.Until()) })
		if !lost && ctx.Err() == nil && rng.IntN(3) == 0 {
			// The leader crashes: no resignation, its keys expire.
			r := e.rec.invoke(checker.Op{Client: a.name, Resource: resource, Kind: checker.Release, Lock: id, Err: "leader crashed: client closed without resigning"})
			_ = a.client.Close()
			e.rec.complete(r, func(o *checker.Op) { crashes.add(o.Start) })
			na, err := e.dialActor(a.name, g, rng.Uint64())
			if err != nil {
				return err
			}
			if a != first {
				_ = a.client.Close()
			}
			na.grants, a = a.grants, na
			if el, err = election.New(a.client, electionName); err != nil {
				return fmt.Errorf("torture: candidate %s: %w", a.name, err)
			}
			continue
		}
		r := e.rec.invoke(checker.Op{Client: a.name, Resource: resource, Kind: checker.Release, Lock: id})
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
		rerr := lead.Resign(rctx)
		cancel()
		e.rec.complete(r, func(o *checker.Op) {
			o.OK = rerr == nil
			switch {
			case lost:
				o.Err = "leadership lost: " + lead.Err().Error()
			case rerr != nil:
				o.Err = rerr.Error()
			}
		})
		sleep(ctx, time.Duration(rng.Int64N(int64(ttl/4)+1)))
	}
	return nil
}
