package byzantine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// InteractiveGeneralResult is what one general did in an interactive run
// over a real transport.
type InteractiveGeneralResult struct {
	// ID is the general.
	ID ID `json:"id"`
	// Vector is the vector it decided (entry i: its decision in instance
	// i); nil when it crashed.
	Vector []Order `json:"vector,omitempty"`
	// Instances holds its result in instance i at index i, in the
	// instance's ids (see InstanceID).
	Instances []GeneralResult `json:"instances"`
	// Heard[p] is true when it received general p's own value directly and
	// in time (Heard[ID] is true).
	Heard []bool `json:"heard,omitempty"`
	// Crashed is true when Config.Crashes made it crash.
	Crashed bool `json:"crashed,omitempty"`
}

// Overran returns the rounds, over all instances, in which the general
// did not keep the schedule (see GeneralResult.Overran).
func (r InteractiveGeneralResult) Overran() []int {
	var rounds []int
	for _, in := range r.Instances {
		for _, x := range in.Overran {
			if !containsInt(rounds, x) {
				rounds = append(rounds, x)
			}
		}
	}
	return rounds
}

// Faults returns the peers the general saw fail in any instance (absent,
// gone or late; see GeneralResult.Faults), in the generals' own ids, the
// first failure of each, in increasing order of id.
func (r InteractiveGeneralResult) Faults() []PeerFault {
	var out []PeerFault
	for i, in := range r.Instances {
		for _, f := range in.Faults {
			f.ID = InstanceID(ID(i), f.ID)
			k := slices.IndexFunc(out, func(x PeerFault) bool { return x.ID == f.ID })
			switch {
			case k < 0:
				out = append(out, f)
			case f.Round < out[k].Round:
				out[k] = f
			}
		}
	}
	slices.SortFunc(out, func(a, b PeerFault) int { return int(a.ID - b.ID) })
	return out
}

// Stats returns the general's counters summed over its instances.
func (r InteractiveGeneralResult) Stats() Stats {
	var s Stats
	for _, in := range r.Instances {
		s.add(in.Stats)
	}
	return s
}

// FaultyPeers returns the ids of the peers the general saw fail in any
// instance (see Faults), in increasing order.
func (r InteractiveGeneralResult) FaultyPeers() []ID {
	var ids []ID
	for _, f := range r.Faults() {
		ids = append(ids, f.ID)
	}
	return ids
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// RunInteractiveGeneral runs general id of ic over ep, a real transport
// (package tcp), from start: the n instances run concurrently, each
// driven by RunGeneral over its own view of ep. Their messages share ep,
// told apart by their run id (each instance has its own, derived from
// ic.Config.Run()); ids are mapped to and from each instance's (see
// InstanceID); a peer's end-of-round marker is sent once every instance
// of this general sent its round, and counts in every instance, since the
// transport delivers each peer's events in order. keys holds this
// general's private key and every general's public key, in the generals'
// own ids (SM). Every general of the run must be given the same ic and
// start. A general that ic.Config.Crashes makes crash returns a result
// marked Crashed and an error wrapping ErrCrashed.
func RunInteractiveGeneral(ctx context.Context, ic InteractiveConfig, id ID, keys Keyring, ep Endpoint, start time.Time) (InteractiveGeneralResult, error) {
	if err := ic.Validate(); err != nil {
		return InteractiveGeneralResult{}, err
	}
	n := ic.Config.Generals
	if id < 0 || int(id) >= n {
		return InteractiveGeneralResult{}, fmt.Errorf("%w: general id %d out of range 0..%d", ErrInvalidConfig, id, n-1)
	}
	gens := make([]*General, n)
	for i := range n {
		g, err := NewGeneral(ic.Instance(ID(i)), InstanceID(ID(i), id), instanceKeys(keys, ID(i)))
		if err != nil {
			return InteractiveGeneralResult{}, fmt.Errorf("instance %d: %w", i, err)
		}
		gens[i] = g
	}
	mux := newICMux(ep, ic, id)
	res := InteractiveGeneralResult{ID: id, Instances: make([]GeneralResult, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer mux.finish(i)
			var view Endpoint = mux.views[i]
			if pr, ok := ep.(PauseReporter); ok {
				view = pausingView{mux.views[i], pr}
			}
			res.Instances[i], errs[i] = RunGeneral(ctx, gens[i], view, start, nil)
		})
	}
	wg.Wait()
	if ctx.Err() != nil && errors.Is(errors.Join(errs...), ErrStopped) {
		// Every instance stopped for the same reason: say it once.
		return res, StoppedError(ctx, fmt.Sprintf("general %d", id), errs...)
	}
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, ErrCrashed) {
			res.Crashed = true
			return res, fmt.Errorf("%w: general %d", ErrCrashed, id)
		}
		return res, err
	}
	res.Vector = make([]Order, n)
	res.Heard = make([]bool, n)
	for i := range n {
		res.Vector[i] = res.Instances[i].Decision
		res.Heard[i] = gens[i].heardCommander()
	}
	return res, nil
}

// AssembleInteractive builds an InteractiveResult from the per-general
// results of a run over a real transport; a general missing from results
// (its process died) counts as crashed.
func AssembleInteractive(ic InteractiveConfig, results map[ID]InteractiveGeneralResult) *InteractiveResult {
	n := ic.Config.Generals
	out := &InteractiveResult{Config: ic, Instances: make([]*Result, n), Heard: make([][]bool, n), Rounds: ic.Config.MaxTraitors + 1}
	for i := range n {
		grs := make([]GeneralResult, n)
		for g := range n {
			v := InstanceID(ID(i), ID(g))
			r, ok := results[ID(g)]
			if !ok || r.Crashed || len(r.Instances) != n {
				grs[v] = GeneralResult{ID: v, Loyal: ic.Config.strategyOf(ID(g)) == "", Strategy: ic.Config.strategyOf(ID(g)), Crashed: true}
				if ok && len(r.Instances) == n {
					grs[v].Stats = r.Instances[i].Stats
				}
				continue
			}
			grs[v] = r.Instances[i]
			grs[v].ID = v
		}
		out.Instances[i] = Assemble(ic.Instance(ID(i)), grs)
	}
	for g := range n {
		if r, ok := results[ID(g)]; ok && !r.Crashed {
			out.Heard[g] = r.Heard
		}
	}
	out.assemble()
	return out
}

// icMux shares one Endpoint among the n instances of one general.
type icMux struct {
	ep    Endpoint
	self  ID
	n     int
	runs  map[RunID]int
	views []*icView

	// reader is a token: the instance holding it reads ep for all of
	// them, so that an event is handed over by whichever instance asks
	// for the next one, with no hop in between (a round's deadline takes
	// what the transport holds at once).
	reader chan struct{}

	mu    sync.Mutex
	ended map[int]int // round -> instances that ended it
	gone  []bool      // instance finished: its events are dropped
}

// icView is instance i's Endpoint.
type icView struct {
	mux  *icMux
	i    ID
	in   chan Inbound
	quit chan struct{}
}

func newICMux(ep Endpoint, ic InteractiveConfig, self ID) *icMux {
	n := ic.Config.Generals
	mx := &icMux{ep: ep, self: self, n: n, runs: make(map[RunID]int, n), ended: make(map[int]int), gone: make([]bool, n), reader: make(chan struct{}, 1)}
	base := ic.Config.Run()
	for i := range n {
		mx.runs[instanceRun(base, ID(i))] = i
		mx.views = append(mx.views, &icView{mux: mx, i: ID(i), in: make(chan Inbound, 64*n), quit: make(chan struct{})})
	}
	return mx
}

// finish marks instance i as done: events for it are no longer queued.
func (mx *icMux) finish(i int) {
	mx.mu.Lock()
	defer mx.mu.Unlock()
	if !mx.gone[i] {
		mx.gone[i] = true
		close(mx.views[i].quit)
	}
}

// route hands an event read from ep to its instance (a message, by its
// run id; a message of no instance goes to instance 0, which refuses it as
// stale) or to every instance (markers, departures, refusals), in the
// instance's ids.
func (mx *icMux) route(ev Inbound) {
	if ev.Message != nil {
		mx.deliver(mx.runs[ev.Message.Run], ev)
		return
	}
	for i := range mx.n {
		mx.deliver(i, ev)
	}
}

func (mx *icMux) deliver(i int, ev Inbound) {
	v := mx.views[i]
	ev.From = InstanceID(v.i, ev.From)
	if ev.Message != nil {
		msg := *ev.Message
		msg.From = ev.From
		msg.To = InstanceID(v.i, msg.To)
		ev.Message = &msg
	}
	// Never dropped for the reader's own deadline: the instance takes it,
	// or has finished (quit).
	select {
	case v.in <- ev:
	case <-v.quit:
	}
}

// Send sends msg of instance v.i, addressed in the instance's ids.
func (v *icView) Send(ctx context.Context, msg Message) error {
	msg.To = InstanceID(v.i, msg.To)
	msg.From = v.mux.self
	return v.mux.ep.Send(ctx, msg)
}

// EndRound records that instance v.i sent all of round r; the last
// instance to do so sends the marker, which then covers all of them. It
// does not wait for the others: an instance that went on to round r+1
// sends its messages before the marker, which receivers keep for r+1. A
// traitor's message tagged r and sent after its instance ended round r
// may thus arrive before the marker and count in round r, as if sent in
// time, which a traitor can do anyway; a loyal general sends nothing
// tagged r after it ended round r.
func (v *icView) EndRound(ctx context.Context, r int) error {
	mx := v.mux
	mx.mu.Lock()
	mx.ended[r]++
	last := mx.ended[r] == mx.n
	mx.mu.Unlock()
	if !last {
		return nil
	}
	return mx.ep.EndRound(ctx, r)
}

// Recv returns instance v.i's next event: one already handed to it, or,
// holding the reader token, the next ones of ep until one is its own (the
// others are handed to their instances).
func (v *icView) Recv(ctx context.Context) (Inbound, error) {
	mx := v.mux
	for {
		select {
		case ev := <-v.in:
			return ev, nil
		default:
		}
		select {
		case ev := <-v.in:
			return ev, nil
		case <-ctx.Done():
			return Inbound{}, ctx.Err()
		case mx.reader <- struct{}{}:
		}
		select {
		case ev := <-v.in: // handed over while this instance waited
			<-mx.reader
			return ev, nil
		default:
		}
		ev, err := mx.ep.Recv(ctx)
		if err != nil {
			<-mx.reader
			return Inbound{}, err
		}
		mx.route(ev)
		<-mx.reader
	}
}

// pausingView is an instance's view of an endpoint that reports its own
// pauses (PauseReporter), which the view passes on.
type pausingView struct {
	*icView
	PauseReporter
}

// Linked reports whether the shared endpoint has a working link to p (in
// the instance's ids), when it can tell (LinkReporter); otherwise true.
func (v *icView) Linked(p ID) bool {
	if lr, ok := v.mux.ep.(LinkReporter); ok {
		return lr.Linked(InstanceID(v.i, p))
	}
	return true
}

var _ LinkReporter = (*icView)(nil)

// Lost reports whether the shared endpoint dropped a message to p (in the
// instance's ids) after Send had accepted it, when it can tell
// (LossReporter); otherwise false. The shared endpoint cannot tell which
// instance the message was of: every instance sees the loss.
func (v *icView) Lost(p ID) bool {
	if lr, ok := v.mux.ep.(LossReporter); ok {
		return lr.Lost(InstanceID(v.i, p))
	}
	return false
}

var _ LossReporter = (*icView)(nil)

// Down reports whether the shared endpoint knows peer p (in the
// instance's ids) to be down (DownReporter); otherwise false.
func (v *icView) Down(p ID) bool {
	if dr, ok := v.mux.ep.(DownReporter); ok {
		return dr.Down(InstanceID(v.i, p))
	}
	return false
}

var _ DownReporter = (*icView)(nil)

// Reached reports whether the shared endpoint ever had a link to p (in
// the instance's ids), when it can tell (ReachReporter); otherwise true.
func (v *icView) Reached(p ID) bool {
	if rr, ok := v.mux.ep.(ReachReporter); ok {
		return rr.Reached(InstanceID(v.i, p))
	}
	return true
}

var _ ReachReporter = (*icView)(nil)
