package tcptest

import (
	mrand "math/rand/v2"
	"slices"
	"sync"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// The attacks on timing: the traitor runs the general (with its lies)
// and holds each frame, messages and end-of-round markers alike, until a
// moment of the run's schedule it chooses, per peer and round; the
// frames to one peer keep their order.
const (
	// LastMoment: every frame of round r reaches its peers just before
	// round r's deadline (an eighth of a round before it), so that the
	// loyal generals wait out nearly every round and take its messages
	// at the last moment.
	LastMoment Attack = "last-moment"
	// Split: its victims get every frame of round r a quarter of a round
	// after round r's deadline, too late; the other generals get them at
	// once. Its victims see it late, the others see no fault at all.
	Split Attack = "split"
	// Reorder: each peer gets round r's frames at its own moment of the
	// round, drawn anew for every round and peer, so that what the
	// traitor sends reaches the peers in a different order each round.
	Reorder Attack = "reorder"
)

// timed reports whether the attack holds frames until a moment of the
// schedule (see WrapOnSchedule).
func (a Attack) timed() bool { return a == LastMoment || a == Split || a == Reorder }

// timer is the part of an attacker that sends frames on its schedule:
// one goroutine per peer sends the peer's frames in order, each at its
// moment.
type timer struct {
	start time.Time
	round time.Duration
	rng   *mrand.Rand
	mu    sync.Mutex
	queue map[byzantine.ID]chan held
	done  chan struct{}
	wg    sync.WaitGroup
}

// held is a frame held until at.
type held struct {
	at   time.Time
	send func()
}

// WrapOnSchedule is Wrap for every attack, the timed ones included
// (LastMoment, Split, Reorder): start and round are the run's schedule
// as the loyal generals keep it, and seed draws Reorder's moments. stop
// drops the frames still held and waits for the goroutines that hold
// them; call it once the traitor's run is over.
func WrapOnSchedule(node *tcp.Node, spec TraitorSpec, run byzantine.RunID, n int, start time.Time, round time.Duration, seed uint64) (ep byzantine.Endpoint, stop func()) {
	a := &attacker{Node: node, spec: spec, run: run, n: n}
	if !spec.Attack.timed() {
		return a, func() {}
	}
	a.timer = &timer{start: start, round: round, rng: mrand.New(mrand.NewPCG(seed, uint64(spec.ID))),
		queue: make(map[byzantine.ID]chan held), done: make(chan struct{})}
	return a, func() {
		close(a.timer.done)
		a.timer.wg.Wait()
	}
}

// moment returns when the traitor lets round r's frames to p go.
func (a *attacker) moment(p byzantine.ID, r int) time.Time {
	t := a.timer
	deadline := t.start.Add(time.Duration(r+1) * t.round)
	switch a.spec.Attack {
	case LastMoment:
		return deadline.Add(-t.round / 8)
	case Split:
		if slices.Contains(a.spec.Victims, p) {
			return deadline.Add(t.round / 4)
		}
		return time.Time{}
	default: // Reorder
		t.mu.Lock()
		d := time.Duration(t.rng.Int64N(int64(t.round * 3 / 4)))
		t.mu.Unlock()
		return deadline.Add(-t.round + d)
	}
}

// hold queues send for peer p, round r.
func (a *attacker) hold(p byzantine.ID, r int, send func()) {
	t := a.timer
	t.mu.Lock()
	q, ok := t.queue[p]
	if !ok {
		q = make(chan held, 1<<12)
		t.queue[p] = q
		t.wg.Go(func() { t.release(q) })
	}
	t.mu.Unlock()
	select {
	case q <- held{at: a.moment(p, r), send: send}:
	case <-t.done:
	}
}

// release sends the frames of q, each at its moment, until done.
func (t *timer) release(q <-chan held) {
	for {
		var h held
		select {
		case <-t.done:
			return
		case h = <-q:
		}
		if wait := time.Until(h.at); wait > 0 {
			tm := time.NewTimer(wait)
			select {
			case <-t.done:
				tm.Stop()
				return
			case <-tm.C:
			}
		}
		h.send()
	}
}
