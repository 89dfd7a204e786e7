package byzantine

import (
	"context"
	"errors"
	"fmt"
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

// Refuse counts a message the driver refused before it reached the state
// machine (for example one that arrived after its sender's end-of-round
// marker).
func (g *General) Refuse(why RejectReason) { g.reject(why) }

// RunGeneral drives g over ep in synchronous rounds (A3 by timeouts, B9
// timing): round r ends when every peer announced the end of its round r,
// or at start + (r+1)*cfg.RoundTimeout, whichever comes first. A message
// tagged with round r that arrives after the receiver left round r, or
// after its sender's end-of-round marker, is rejected as late. A Silent
// traitor sends no markers either, like a crashed general; the others wait
// for the round timeout. Every general of a run must be given the same
// start. When trace is non-nil, every received message is recorded there.
func RunGeneral(ctx context.Context, g *General, ep Endpoint, start time.Time, trace *[]TraceEvent) (GeneralResult, error) {
	n, m := g.n, g.m
	ended := make([]int, n) // last round each peer finished
	gone := make([]bool, n)
	for i := range ended {
		ended[i] = -1
	}
	gone[g.id] = true
	var future []Message
	mute := g.strategy == Silent
	deliver := func(r int, msg Message) {
		why := g.Receive(msg)
		if trace != nil {
			*trace = append(*trace, TraceEvent{Round: r, Message: msg, Rejected: why})
		}
	}
	refuse := func(r int, msg Message, why RejectReason) {
		g.Refuse(why)
		if trace != nil {
			*trace = append(*trace, TraceEvent{Round: r, Message: msg, Rejected: why})
		}
	}
	var out []Message
	for r := 0; r <= m+1; r++ {
		g.Advance(r)
		out = g.Outbox(out[:0])
		for _, msg := range out {
			if err := ep.Send(ctx, msg); err != nil && ctx.Err() != nil {
				return GeneralResult{}, fmt.Errorf("%w: general %d round %d: %w", ErrStopped, g.id, r, errors.Join(err, ctx.Err()))
			}
		}
		if !mute {
			if err := ep.EndRound(ctx, r); err != nil && ctx.Err() != nil {
				return GeneralResult{}, fmt.Errorf("%w: general %d round %d: %w", ErrStopped, g.id, r, errors.Join(err, ctx.Err()))
			}
		}
		keep := future[:0]
		for _, msg := range future {
			if msg.Round == r {
				deliver(r, msg)
			} else {
				keep = append(keep, msg)
			}
		}
		future = keep
		rctx, cancel := context.WithDeadline(ctx, start.Add(time.Duration(r+1)*g.cfg.RoundTimeout))
		for {
			done := true
			for p := range n {
				if !gone[p] && ended[p] < r {
					done = false
					break
				}
			}
			if done {
				break
			}
			ev, err := ep.Recv(rctx)
			if err != nil {
				if ctx.Err() != nil {
					cancel()
					return GeneralResult{}, fmt.Errorf("%w: general %d round %d: %w", ErrStopped, g.id, r, errors.Join(err, ctx.Err()))
				}
				break // the round's deadline: absent messages are detected (A3)
			}
			p := ev.From
			if p < 0 || int(p) >= n {
				continue
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
				case msg.Round > m+1:
					refuse(r, msg, RejectMalformed) // no such round: not buffered
				case msg.Round > r:
					future = append(future, msg)
				default:
					deliver(r, msg)
				}
			}
			if ev.Gone {
				gone[p] = true
			}
		}
		cancel()
	}
	for _, msg := range future {
		refuse(m+1, msg, RejectLate)
	}
	return GeneralResult{
		ID:       g.id,
		Loyal:    g.Loyal(),
		Strategy: g.strategy,
		Decision: g.Decide(),
		Values:   g.Values(),
		Stats:    g.Stats(),
	}, nil
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
