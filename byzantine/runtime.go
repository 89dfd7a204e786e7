package byzantine

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Inbound is one event a real transport delivers to a general.
type Inbound struct {
	// From is the peer, authenticated by the transport (A2).
	From ID
	// Message is the message received, nil for the other events.
	Message *Message
	// EndOfRound is set when the peer announces it sent everything of
	// round EndOfRound (a marker; Message is nil).
	EndOfRound int
	// Marker is true for an end-of-round marker.
	Marker bool
	// Gone is true when the transport cut the peer off (it sent garbage or
	// closed its connection); it will send nothing more.
	Gone bool
	// Rejected is set when the transport refused what the peer sent before
	// cutting it off (for example RejectMalformed or RejectOversized).
	Rejected RejectReason
	// At, when the transport sets it, is when the event arrived. A message
	// that arrived before its round's deadline but was taken after it
	// shows that the receiver, not the sender, fell behind the schedule
	// when it arrived at least a sixteenth of the round before the
	// deadline (a sender keeping the schedule sends by an eighth before
	// it): RunGeneral then lists the round in GeneralResult.Overran.
	At time.Time
}

// Endpoint is one general's attachment to a real network of generals. The
// transport must deliver the messages of one peer in the order they were
// sent (FIFO per peer) and must stamp Message.From with the authenticated
// sender.
type Endpoint interface {
	// Send sends msg to msg.To.
	Send(ctx context.Context, msg Message) error
	// EndRound tells every peer that this general sent all of round r.
	EndRound(ctx context.Context, r int) error
	// Recv blocks for the next inbound event, or until ctx ends.
	Recv(ctx context.Context) (Inbound, error)
}

// LinkReporter is implemented by an Endpoint that knows whether it has a
// working link to a peer. RunGeneral reports a peer that missed a round's
// deadline without one as absent rather than late.
type LinkReporter interface {
	// Linked reports whether the endpoint has a working link to p.
	Linked(p ID) bool
}

// DownReporter is implemented by an Endpoint that can tell a peer that
// does not take part in the run: it has no connection open to this
// general, and nothing listens at its address (the last dial to it was
// refused) or it proved that it runs another run, so nothing it sent in
// this run can be waiting unread in this general's transport. A
// general stopped across a round's deadline (see PauseReporter) lists the
// round in Overran only when a peer that had not ended the round could
// have had its messages or marker held up by the stop: a peer that is
// down could not, and it is a fault the run allows either way (a loyal
// general listens for the whole of its run).
type DownReporter interface {
	// Down reports whether peer p is down.
	Down(p ID) bool
}

// LossReporter is implemented by an Endpoint whose Send may return before
// the message is on its way (it queues it): Lost reports whether a message
// to p that Send accepted was then dropped or is still undelivered at its
// round's deadline, because the link to p failed after it had been up and
// p did not take it back in time, or because no link to p ever came up
// (p's address refuses connections, or no handshake with it succeeded,
// while p's own messages may well arrive on the links p dialled).
// RunGeneral counts p among the faults (PeerUnreachable, PeerGone, or
// PeerAbsent when the endpoint says it never reached p: see
// ReachReporter): the endpoint dials a broken or missing link again and
// resends what p did not acknowledge, so a message still undelivered at
// its round's deadline is p's failure (it reset or refused the links, or
// withheld its acknowledgements), not this general's lateness.
type LossReporter interface {
	// Lost reports whether a message to p accepted by Send was dropped.
	Lost(p ID) bool
}

// ReachReporter is implemented by an Endpoint that can tell whether a
// link to a peer was ever up in the run. RunGeneral counts a peer whose
// messages were lost (LossReporter) and that was never reached as absent
// (PeerAbsent): this general never had a link to send on.
type ReachReporter interface {
	// Reached reports whether a link to p was up at some time in the run.
	Reached(p ID) bool
}

// Refuse counts a message the driver refused before it reached the state
// machine (for example one that arrived after its sender's end-of-round
// marker).
func (g *General) Refuse(why RejectReason) { g.reject(why) }

// RunGeneral drives g over ep in synchronous rounds (A3 by timeouts, B9
// timing): round r ends when every peer announced the end of its round r,
// or at start + (r+1)*cfg.RoundTimeout, whichever comes first; events the
// transport stamped (Inbound.At) as arrived before that deadline still
// count in the round even when this general takes them later. A message
// tagged with round r that arrives after the receiver left round r, or
// after its sender's end-of-round marker, is rejected as late. A Silent
// traitor sends no markers either, like a crashed general; the others wait
// for the round timeout. Every general of a run must be given the same
// start. A round in which the general could not send everything before
// the round's deadline (it started late, or was too slow; within
// pauseSlack of it counts), did not take a message that had arrived in
// time (Inbound.At, up to half pauseSlack before the deadline), was stopped over the end of the round up to its
// deadline (PauseReporter, or a watcher of its own) while a peer not known
// to be down had not ended the round (DownReporter), is listed in
// GeneralResult.Overran (a message to a peer that could not be delivered
// makes that peer a fault instead: see LossReporter): its decision is then not guaranteed, and callers
// must report the run as out of time rather than trust it. When trace is non-nil, every received message is recorded there.
// A general that cfg.Crashes makes crash returns, at the start of its
// crash round, a result marked Crashed and an error wrapping ErrCrashed.
func RunGeneral(ctx context.Context, g *General, ep Endpoint, start time.Time, trace *[]TraceEvent) (GeneralResult, error) {
	n, m := g.n, g.m
	// stopped is the error of a run whose context ended in round r; err
	// is what the endpoint said, kept when it says more than the context.
	stopped := func(r int, err error) error {
		if err == nil || errors.Is(err, ctx.Err()) {
			return fmt.Errorf("%w: general %d round %d: %w", ErrStopped, g.id, r, ctx.Err())
		}
		return fmt.Errorf("%w: general %d round %d: %w", ErrStopped, g.id, r, errors.Join(ctx.Err(), err))
	}
	ended := make([]int, n) // last round each peer finished
	gone := make([]bool, n)
	for i := range ended {
		ended[i] = -1
	}
	gone[g.id] = true
	fut := newFutureBuf(g)
	mute := g.strategy == Silent
	// faults holds what this general saw of its peers' failures, the
	// first of each peer: a peer it has no link to (ErrPeerAbsent), one
	// whose connection closed, one that had not ended a round by the
	// round's deadline, one that did not take what this general sent it,
	// and one that sent a message no loyal general sends. They are faults
	// the run allows, within m. A peer that announced the end of round m
	// has sent all it had to: that it leaves afterwards (its run is over)
	// is no fault.
	faults := make(map[ID]PeerFault)
	fault := func(p ID, kind PeerFaultKind, r int) {
		if p < 0 || int(p) >= n || p == g.id || ended[p] >= m {
			return
		}
		if _, seen := faults[p]; !seen {
			faults[p] = PeerFault{ID: p, Kind: kind, Round: r}
		}
	}
	// blame counts the sender of a message refused as one no loyal
	// general sends among the faults: the transport authenticated it
	// (A2), so what it sent is its own doing (see provesFault).
	blame := func(r int, msg Message, why RejectReason) {
		if provesFault(why) {
			fault(msg.From, PeerRefused, r)
		}
	}
	deliver := func(r int, msg Message) {
		why := g.Receive(msg)
		blame(r, msg, why)
		if trace != nil {
			*trace = append(*trace, TraceEvent{Round: r, Message: msg, Rejected: why})
		}
	}
	refuse := func(r int, msg Message, why RejectReason) {
		g.Refuse(why)
		blame(r, msg, why)
		if why == RejectOversized || why == RejectMalformed || why == RejectFlood {
			msg.Sigs = nil // a refused giant is not kept, even in a trace
		}
		if trace != nil {
			*trace = append(*trace, TraceEvent{Round: r, Message: msg, Rejected: why})
		}
	}
	pauses, ok := ep.(PauseReporter)
	if !ok {
		w := watchPauses(pauseSlack(g.cfg.RoundTimeout))
		defer w.stop()
		pauses = w
	}
	var overran []int
	// lost holds, per peer, the first round in which a message to it could
	// not be sent. The peer is then a fault the run allows, within m: gone
	// when its connection to this general closed too, unreachable
	// otherwise. This general kept its schedule (it sent in time, and its
	// endpoint dialled the link again); a peer that broke its links,
	// refused the redials or withheld its acknowledgements failed, and a
	// loyal peer with a transient reset loses nothing (see LossReporter).
	lost := make(map[ID]int)
	var carry []Inbound // events taken after a deadline, for the next rounds
	crash := g.cfg.CrashRound(g.id)
	// queuedLoss records in lost the peers the endpoint says it dropped a
	// message to (a Send that had returned nil), as of round r at the
	// latest.
	losses, _ := ep.(LossReporter)
	reach, _ := ep.(ReachReporter)
	unreached := make(map[ID]bool) // peers of lost never reached: absent
	queuedLoss := func(r int) {
		if losses == nil || r < 0 {
			return
		}
		for p := range n {
			if _, ok := lost[ID(p)]; !ok && ID(p) != g.id && losses.Lost(ID(p)) {
				lost[ID(p)] = min(r, m)
				unreached[ID(p)] = reach != nil && !reach.Reached(ID(p))
			}
		}
	}
	for r := 0; r <= m+1; r++ {
		queuedLoss(r - 1)
		if r == crash {
			return GeneralResult{ID: g.id, Loyal: g.Loyal(), Strategy: g.strategy, Crashed: true, Stats: g.Stats()},
				fmt.Errorf("%w: general %d at round %d", ErrCrashed, g.id, r)
		}
		if ctx.Err() != nil {
			// Before Advance, which makes room for everything this round
			// receives (for OM with many generals, megabytes per
			// general and instance).
			return GeneralResult{}, stopped(r, nil)
		}
		g.Advance(r)
		// Sign and send as the messages are made: the first leaves before
		// the last is signed, so a general with much to send is not silent
		// for the whole of its round.
		var sendErr error
		g.stream(func(msg Message) {
			if sendErr != nil {
				return
			}
			if err := ep.Send(ctx, msg); err != nil {
				if ctx.Err() != nil {
					sendErr = err
					g.halt() // the rest of the round would be refused as well
				} else if errors.Is(err, ErrPeerAbsent) {
					kind := PeerAbsent
					if msg.To >= 0 && int(msg.To) < n && gone[msg.To] {
						kind = PeerGone
					}
					fault(msg.To, kind, r)
				} else if _, ok := lost[msg.To]; !ok && msg.To >= 0 && int(msg.To) < n {
					lost[msg.To] = r
				}
			}
		})
		if sendErr != nil {
			return GeneralResult{}, stopped(r, sendErr)
		}
		if !mute {
			if err := ep.EndRound(ctx, r); err != nil && ctx.Err() != nil {
				return GeneralResult{}, stopped(r, err)
			}
		}
		deadline := start.Add(time.Duration(r+1) * g.cfg.RoundTimeout)
		if r <= m && time.Now().After(deadline.Add(-pauseSlack(g.cfg.RoundTimeout))) {
			// What this general sent in round r left after the round's
			// deadline, or so close to it that a receiver may read it
			// after (see pauseSlack): receivers that keep the schedule
			// refuse it as late, and the run's synchrony (A3) did not hold
			// for it.
			overran = append(overran, r)
		}
		for _, msg := range fut.take(r) {
			deliver(r, msg)
		}
		// handle takes one event into round r.
		handle := func(ev Inbound) {
			p := ev.From
			if p < 0 || int(p) >= n {
				return
			}
			switch {
			case ev.Rejected != "":
				refuse(r, Message{From: p, To: g.id, Round: r}, ev.Rejected)
			case ev.Marker:
				ended[p] = max(ended[p], ev.EndOfRound)
			case ev.Message != nil:
				msg := *ev.Message
				msg.From = p // A2: the transport names the sender
				switch {
				case msg.Round < r || ended[p] >= msg.Round:
					refuse(r, msg, RejectLate)
					if msg.Round < r && msg.Round >= 0 && ended[p] < msg.Round && !ev.At.IsZero() && !ev.At.After(start.Add(time.Duration(msg.Round+1)*g.cfg.RoundTimeout-pauseSlack(g.cfg.RoundTimeout)/2)) &&
						!slices.Contains(overran, msg.Round) && g.wouldCount(msg) {
						// It was here in time and would have counted; this
						// general was too busy to take it: it did not keep
						// the schedule. (A traitor's useless traffic, which
						// would have been refused anyway, does not count,
						// nor does a message its sender sent after its own
						// end-of-round marker: the sender was late, not
						// this general. Nor does one that arrived in the
						// last half pauseSlack of its round: a sender
						// keeping the schedule had it in the transport
						// sooner, and a transport hands over what it read
						// a moment after stamping it, so that such a
						// message may miss the wait for what is queued at
						// the deadline without this general having been
						// slow.)
						overran = append(overran, msg.Round)
						slices.Sort(overran)
					}
				case msg.Round > m+1:
					refuse(r, msg, RejectMalformed) // no such round: not buffered
				case msg.Round > m:
					refuse(r, msg, RejectLate) // round m+1 carries only stragglers
				case msg.Round > r:
					if why := fut.add(msg); why != "" {
						refuse(r, msg, why)
					}
				default:
					deliver(r, msg)
				}
			}
			if ev.Gone {
				gone[p] = true
				fault(p, PeerGone, r)
			}
		}
		// heldUp reports whether a peer that had not ended round r when
		// the round closed could have had what it sent held up in the
		// transport by a stop of this general: it is not gone and not
		// known to be down.
		heldUp := func(r int) bool {
			downs, _ := ep.(DownReporter)
			for p := range n {
				if !gone[p] && ended[p] < r && (downs == nil || !downs.Down(ID(p))) {
					return true
				}
			}
			return false
		}
		allEnded := func() bool {
			for p := range n {
				if !gone[p] && ended[p] < r {
					return false
				}
			}
			return true
		}
		rctx, cancel := context.WithDeadline(ctx, deadline)
		atDeadline := false
		for !allEnded() {
			if ctx.Err() != nil {
				// Events the endpoint already holds are no reason to
				// go on: the run is over.
				cancel()
				return GeneralResult{}, stopped(r, nil)
			}
			if len(carry) > 0 {
				if carry[0].At.After(deadline) {
					atDeadline = true // a carried event belongs to a later round
					break
				}
				ev := carry[0]
				carry = carry[1:]
				handle(ev)
				continue
			}
			ev, err := ep.Recv(rctx)
			if err != nil {
				if ctx.Err() != nil {
					cancel()
					return GeneralResult{}, stopped(r, err)
				}
				atDeadline = true
				break
			}
			if ev.At.IsZero() {
				ev.At = time.Now()
			}
			if ev.At.After(deadline) {
				// Stamped after the deadline, though this general had not
				// yet seen the deadline pass: it is not in the round.
				carry = append(carry, ev)
				atDeadline = true
				break
			}
			handle(ev)
		}
		cancel()
		if atDeadline {
			// The round's deadline. What the transport stamped as arrived
			// before it still belongs to the round, however long this
			// general took to get to it, and in whatever order the
			// transport hands the peers' events over (a peer whose queue
			// was full stamped its next event before it could queue it):
			// everything already queued is taken now, those stamped in
			// time into the round, the others carried, in order, to the
			// next rounds. The drain stops when nothing more is queued, or
			// after as many events as the transport's queues hold, so that
			// a peer sending without end cannot hold the round open.
			keep := carry[:0]
			for _, ev := range carry {
				if ev.At.After(deadline) {
					keep = append(keep, ev)
				} else {
					handle(ev)
				}
			}
			carry = keep
			for range drainLimit(n) {
				ev, err := takeQueued(ctx, ep)
				if err != nil || ctx.Err() != nil {
					break
				}
				if ev.At.IsZero() {
					ev.At = time.Now()
				}
				if ev.At.After(deadline) {
					carry = append(carry, ev)
				} else {
					handle(ev)
				}
			}
			if ctx.Err() != nil {
				return GeneralResult{}, stopped(r, nil)
			}
			if r <= m && pauses.Paused(deadline.Add(-pauseSlack(g.cfg.RoundTimeout)/2), deadline) && !slices.Contains(overran, r) && heldUp(r) {
				// This general was not running in the last part of the
				// round, up to its deadline (its process was stopped or
				// starved): what its peers sent in time may have waited
				// unread in the transport and been stamped late, so the
				// late messages it refused prove nothing about its peers.
				// (A loyal peer's messages are in the transport pauseSlack
				// before the deadline; a general that ran half of that
				// after them has read them.) Peers that ended the round,
				// and peers that are down, had nothing held up.
				overran = append(overran, r)
				slices.Sort(overran)
			}
			links, _ := ep.(LinkReporter)
			for p := range n {
				if !gone[p] && ended[p] < r && r <= m {
					kind := PeerLate
					if links != nil && !links.Linked(ID(p)) {
						kind = PeerAbsent
					}
					fault(ID(p), kind, r)
				}
			}
		}
	}
	for _, msg := range fut.take(-1) {
		refuse(m+1, msg, RejectLate)
	}
	queuedLoss(m)
	for p, r := range lost {
		// Unlike a peer that leaves after its last round, a peer that did
		// not take a message of round m or before failed, however many
		// rounds it announced.
		if _, seen := faults[p]; !seen && r <= m && p >= 0 && int(p) < n && p != g.id {
			kind := PeerUnreachable
			switch {
			case gone[p]:
				kind = PeerGone
			case unreached[p]:
				kind = PeerAbsent
			}
			faults[p] = PeerFault{ID: p, Kind: kind, Round: r}
		}
	}
	slices.Sort(overran)
	res := GeneralResult{
		ID:       g.id,
		Loyal:    g.Loyal(),
		Strategy: g.strategy,
		Decision: g.Decide(),
		Values:   g.Values(),
		Stats:    g.Stats(),
		Overran:  overran,
	}
	for _, f := range faults {
		res.Faults = append(res.Faults, f)
	}
	slices.SortFunc(res.Faults, func(a, b PeerFault) int { return int(a.ID - b.ID) })
	if slices.Contains(g.cfg.Explain, g.id) {
		res.Explanation = g.Explain()
	}
	if trace != nil && g.Loyal() {
		for _, msg := range g.Missing() {
			*trace = append(*trace, TraceEvent{Round: msg.Round, Message: msg, Fault: Missing})
		}
	}
	return res, nil
}

// provesFault reports whether a message refused for why proves its
// direct sender faulty: no loyal general sends a message of the wrong
// shape, too long, addressed to another, naming another general as its
// sender, or whose signature chain does not verify (a loyal general signs
// its own link and relays only chains it verified). A message refused as
// late, duplicate, stale or over a cap proves nothing by itself.
func provesFault(why RejectReason) bool {
	switch why {
	case RejectMalformed, RejectOversized, RejectMisaddressed, RejectSpoofed, RejectForged:
		return true
	}
	return false
}

// pauseSlack is an eighth of the round timeout: a general whose sends of a
// round end later than that before the round's deadline lists the round in
// Overran, so a loyal general's messages are in its peers' transports at
// least that long before the deadline. A receiver that ran at some moment
// in the second half of that span read them in time; one stopped for the
// whole of it (longer than the pause watcher's threshold, half the slack)
// is what the PauseReporter finds. Small, so that only a general far
// behind the schedule reports a late send.
func pauseSlack(round time.Duration) time.Duration { return round / 8 }

// drainLimit is how many events a general takes, at a round's deadline,
// from what its transport already holds for n generals.
func drainLimit(n int) int { return 256 * n }

// queuedWait is how long, after a round's deadline, a general waits for an
// event already queued by the transport before it closes the round.
const queuedWait = time.Millisecond

// takeQueued returns the next event the transport already holds, waiting
// at most queuedWait.
func takeQueued(ctx context.Context, ep Endpoint) (Inbound, error) {
	qctx, cancel := context.WithTimeout(ctx, queuedWait)
	defer cancel()
	return ep.Recv(qctx)
}

// Assemble builds a Result from the per-general results of a run over a
// real transport, and merges their traces in round order.
func Assemble(cfg Config, generals []GeneralResult, traces ...[]TraceEvent) *Result {
	res := &Result{Config: cfg, Generals: generals}
	for _, t := range traces {
		res.Trace = append(res.Trace, t...)
	}
	sortTrace(res.Trace)
	res.finish()
	return res
}

// futureBuf holds messages that arrived before their round (a peer that
// finished a round sooner than this general runs ahead), so that none a
// peer could legitimately send is lost, and memory stays bounded by what
// the algorithm itself sends: a message is kept only when it has the shape
// of one its sender can send this general in its round, and at most once
// per slot. For OM a slot is a relay path (a second value along the same
// path is a duplicate), so a peer can place no more than the number of its
// relay paths of that round, exactly what a loyal sender sends; for SM a
// peer can place at most what a loyal general sends any one general in a
// whole run (senderCap: the commander one order, a lieutenant one relay of
// each order it keeps), the rule Receive applies to SM senders anyway. A
// message refused here is one no loyal general sends, so its sender is a
// traitor: the refusal costs no loyal message.
type futureBuf struct {
	g     *General
	msgs  []Message
	count map[ID]int // SM: messages kept per peer
	seen  map[string]struct{}
}

func newFutureBuf(g *General) *futureBuf {
	return &futureBuf{g: g, count: make(map[ID]int), seen: make(map[string]struct{})}
}

// add keeps msg for its round, or says why it is refused.
func (f *futureBuf) add(msg Message) RejectReason {
	g := f.g
	if len(msg.Order) > MaxOrderLen || len(msg.Path) > g.m+1 {
		return RejectOversized
	}
	if len(msg.Path) != msg.Round+1 {
		return RejectMalformed // the path or chain length names the round
	}
	if why := g.shapeOf(msg); why != "" {
		return why
	}
	key := pathKey(msg.Path)
	switch g.cfg.Algorithm {
	case OM:
		if len(msg.Sigs) != 0 {
			return RejectMalformed
		}
	case SM:
		if len(msg.Sigs) != len(msg.Path) {
			return RejectMalformed
		}
		for _, s := range msg.Sigs {
			if len(s) > ed25519.SignatureSize {
				return RejectOversized
			}
		}
		key = string(msg.Order) + "\x00" + key
	}
	if _, dup := f.seen[key]; dup {
		return RejectDuplicate
	}
	if g.cfg.Algorithm == SM {
		if f.count[msg.From] >= senderCap(msg.From) {
			return RejectFlood
		}
		f.count[msg.From]++
	}
	f.seen[key] = struct{}{}
	f.msgs = append(f.msgs, msg)
	return ""
}

// take removes and returns the messages of round r (all of them for r < 0).
func (f *futureBuf) take(r int) []Message {
	var out []Message
	keep := f.msgs[:0]
	for _, msg := range f.msgs {
		if r < 0 || msg.Round == r {
			out = append(out, msg)
		} else {
			keep = append(keep, msg)
		}
	}
	clear(f.msgs[len(keep):])
	f.msgs = keep
	return out
}
