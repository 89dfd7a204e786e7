package torture

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"dlm/checker"
	"dlm/redlock"
)

// recorder records a history on one monotonic clock: time.Since of the
// run's start, which Go reads from the monotonic clock.
type recorder struct {
	start time.Time

	mu     sync.Mutex
	nodes  int
	fenced bool
	ops    []checker.Op
	faults []checker.Fault
}

func newRecorder(nodes int, fenced bool) *recorder {
	return &recorder{start: time.Now(), nodes: nodes, fenced: fenced}
}

// now is the time since the start of the run, in nanoseconds.
func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

// at converts a time of this process to run time.
func (r *recorder) at(t time.Time) int64 { return int64(t.Sub(r.start)) }

// invoke records the invocation of op and returns its index.
func (r *recorder) invoke(op checker.Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = len(r.ops) + 1
	op.Start, op.End = r.now(), -1
	r.ops = append(r.ops, op)
	return len(r.ops) - 1
}

// complete records the completion of the op at index i.
func (r *recorder) complete(i int, f func(*checker.Op)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.ops[i])
	r.ops[i].End = max(r.now(), r.ops[i].Start)
}

// fault records the start of a fault and returns a function that records its
// end (safe to call more than once).
func (r *recorder) fault(kind, target, note string) func() {
	r.mu.Lock()
	i := len(r.faults)
	r.faults = append(r.faults, checker.Fault{Kind: kind, Target: target, Start: r.now(), End: -1, Note: note})
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.faults[i].End < 0 {
			r.faults[i].End = r.now()
		}
	}
}

// history returns a copy of what was recorded.
func (r *recorder) history() *checker.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &checker.History{
		Nodes:  r.nodes,
		Fenced: r.fenced,
		Ops:    append([]checker.Op{}, r.ops...),
		Faults: append([]checker.Fault{}, r.faults...),
	}
}

// register is the protected resource: one value per resource name. Fenced,
// it rejects a write whose token is lower than the highest it accepted
// (R18); plain, it accepts every write. It is safe for concurrent use.
type register struct {
	fenced bool

	mu    sync.Mutex
	max   map[string]uint64
	value map[string]string
}

func newRegister(fenced bool) *register {
	return &register{fenced: fenced, max: map[string]uint64{}, value: map[string]string{}}
}

// write stores value under name if the token passes the fence.
func (g *register) write(name string, token uint64, value string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fenced && token < g.max[name] {
		return false
	}
	g.max[name] = max(g.max[name], token)
	g.value[name] = value
	return true
}

func (g *register) read(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.value[name]
}

// tokener is the fencing capability of a lock (R18), discovered by type
// assertion so that the checker works with clients that issue no tokens.
type tokener interface{ Token() uint64 }

// actor is one lock client of a run, recording everything it does.
type actor struct {
	name   string
	client *redlock.Client
	rec    *recorder
	reg    *register
	grants int
}

// grant is a lock an actor holds.
type grant struct {
	lock  *redlock.Lock
	id    string
	token uint64
}

// acquire calls Lock (tries 0: until ctx ends) or TryLock (tries 1) and
// records it.
func (a *actor) acquire(ctx context.Context, resource string, ttl time.Duration, tries int) (*grant, error) {
	return a.acquireAs(ctx, resource, ttl, tries, "")
}

// acquireAs is acquire in a mode: "" for Lock and TryLock, ModeRead for
// RLock and TryRLock, ModeWrite for WLock and TryWLock (read-write locks);
// the history records the mode.
func (a *actor) acquireAs(ctx context.Context, resource string, ttl time.Duration, tries int, mode checker.Mode) (*grant, error) {
	a.grants++
	id := fmt.Sprintf("%s#%d", a.name, a.grants)
	i := a.rec.invoke(checker.Op{Client: a.name, Resource: resource, Kind: checker.Acquire, Lock: id, TTL: int64(ttl), Mode: mode})
	lock, try := a.client.Lock, a.client.TryLock
	switch mode {
	case checker.ModeRead:
		lock, try = a.client.RLock, a.client.TryRLock
	case checker.ModeWrite:
		lock, try = a.client.WLock, a.client.TryWLock
	}
	var l *redlock.Lock
	var err error
	if tries == 1 {
		l, err = try(ctx, resource, redlock.WithTTL(ttl))
	} else {
		l, err = lock(ctx, resource, redlock.WithTTL(ttl), redlock.WithTries(tries))
	}
	g := &grant{lock: l, id: id}
	a.rec.complete(i, func(o *checker.Op) {
		if err != nil {
			o.Err = err.Error()
			var ae *redlock.AcquireError
			if errors.As(err, &ae) {
				for _, n := range ae.Nodes {
					o.Nodes = append(o.Nodes, n.Outcome.String())
				}
			}
			return
		}
		o.OK = true
		o.Until = a.rec.at(l.Until())
		if t, ok := any(l).(tokener); ok {
			g.token = t.Token()
			o.Token = g.token
		}
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// write writes the grant's id to the register under the grant's token.
func (a *actor) write(g *grant) bool {
	r := g.lock.Resource()
	i := a.rec.invoke(checker.Op{Client: a.name, Resource: r, Kind: checker.Write, Lock: g.id, Token: g.token, Value: g.id})
	ok := a.reg.write(r, g.token, g.id)
	a.rec.complete(i, func(o *checker.Op) {
		o.OK = ok
		if !ok {
			o.Err = "register: stale fencing token"
		}
	})
	return ok
}

// writeIfValid writes again as a careful holder does: only while its lock's
// validity has not run out.
func (a *actor) writeIfValid(g *grant) {
	if g.lock.Validity() > 0 {
		a.write(g)
	}
}

// writeDelayed writes the grant's id to the register, with the request
// delayed in flight: it is invoked now and reaches the register only when
// deliver is closed (or ctx ends).
func (a *actor) writeDelayed(ctx context.Context, g *grant, deliver <-chan struct{}) bool {
	r := g.lock.Resource()
	i := a.rec.invoke(checker.Op{Client: a.name, Resource: r, Kind: checker.Write, Lock: g.id, Token: g.token, Value: g.id})
	select {
	case <-deliver:
	case <-ctx.Done():
	}
	ok := a.reg.write(r, g.token, g.id)
	a.rec.complete(i, func(o *checker.Op) {
		o.OK = ok
		if !ok {
			o.Err = "register: stale fencing token"
		}
	})
	return ok
}

// readUnder reads the register as the holder of g.
func (a *actor) readUnder(g *grant) string {
	return a.readAs(g.lock.Resource(), g.id)
}

// read reads the register.
func (a *actor) read(resource string) string {
	return a.readAs(resource, "")
}

// readAs reads the register of resource and records it, as the holder of
// the lock id (none: "").
func (a *actor) readAs(resource, id string) string {
	i := a.rec.invoke(checker.Op{Client: a.name, Resource: resource, Kind: checker.Read, Lock: id})
	v := a.reg.read(resource)
	a.rec.complete(i, func(o *checker.Op) { o.OK, o.Value = true, v })
	return v
}

// release unlocks and records it.
func (a *actor) release(ctx context.Context, g *grant) error {
	return a.recordOn(g, checker.Release, func() error { return g.lock.Unlock(ctx) }, nil)
}

// extend extends and records it.
func (a *actor) extend(ctx context.Context, g *grant) error {
	return a.recordOn(g, checker.Extend, func() error { return g.lock.Extend(ctx) },
		func(o *checker.Op) { o.Until = a.rec.at(g.lock.Until()) })
}

// recordOn does an operation of kind on g's lock and records it; for one
// that succeeded, ok (when set) adds what it learnt.
func (a *actor) recordOn(g *grant, kind checker.Kind, do func() error, ok func(*checker.Op)) error {
	i := a.rec.invoke(checker.Op{Client: a.name, Resource: g.lock.Resource(), Kind: kind, Lock: g.id})
	err := do()
	a.rec.complete(i, func(o *checker.Op) {
		o.OK = err == nil
		if err != nil {
			o.Err = err.Error()
		} else if ok != nil {
			ok(o)
		}
	})
	return err
}

// acquireEach tries once at a time (TryLock), recording every attempt with
// each node's outcome, until one succeeds or ctx ends; between attempts it
// waits pause.
func (a *actor) acquireEach(ctx context.Context, resource string, ttl, pause time.Duration) (*grant, error) {
	for {
		g, err := a.acquire(ctx, resource, ttl, 1)
		if err == nil || ctx.Err() != nil {
			return g, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}
