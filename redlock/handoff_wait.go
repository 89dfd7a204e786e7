package redlock

import (
	"context"
	"time"
)

// The hand-off's waiting (retry.go: waiting): a Lock call waits in its
// key's queue (handoff_queue.go) for an announced release, ranked among
// the clients (handoff_rank.go), for a hand-over from this client's Unlock
// (handoff_handover.go), or for the timed random retry of R10, whichever
// comes first (handoff.go has the overview).

var _ waiting = (*handoff)(nil)

// first keeps a Lock call from barging past this client's waiters for
// the same key: when key has waiters, the call joins the end of the queue
// and waits for its turn (or its timed retry) before its first attempt.
// TryLock never waits, and a set queues behind nobody (multi.go).
func (h *handoff) first(ctx context.Context, t target, o lockOptions) (turn, error) {
	if o.tries == 1 || t.keys != nil {
		return turn{}, nil
	}
	c := h.c
	if s := seamOf(ctx); s != nil && s.turn != nil {
		s.turn(t.resource) // tests: a call about to look at the queue
	}
	if !h.queued(t.key) {
		// Nobody waits: attempt at once, as joinBehind would have
		// said at this moment, and make no waiter (it and its
		// channels). A queue with waiters is joined in joinBehind's one
		// step, which looks again.
		return turn{}, nil
	}
	w := newWaiter(ctx, t.resource, o)
	if !h.joinBehind(t.key, w) {
		return turn{}, nil // nobody waits any more: attempt at once
	}
	// No attempt of its own to bound its rank's slot after an
	// announcement: the client's latest attempt stands in for it.
	return h.waitTurn(ctx, o, time.Duration(c.lastAttempt.Load()), afterNothing, turn{place: w})
}

// woke is the wake-up that the call's latest wait acted on, if it waited.
func (tn turn) woke() wake {
	if tn.place == nil {
		return wake{}
	}
	return tn.place.woke
}

// mark is releasedMark (handoff_queue.go), taken before each attempt.
func (h *handoff) mark(t target) uint64 { return h.releasedMark(t) }

// waitTurn is wait for the call whose turn is tn: the wake-up it acted on
// stays with its waiter (for the next call of next), and a lock handed
// over ends the call.
func (h *handoff) waitTurn(ctx context.Context, o lockOptions, elapsed time.Duration, after waitAfter, tn turn) (turn, error) {
	wk, err := h.wait(ctx, o, elapsed, after, tn.place)
	tn.place.woke, tn.lock = wk, wk.lock
	return tn, err
}

// end takes a finished Lock call out of its key's queue, or a LockAll
// call out of its set's waiters; acquired tells whether it got the lock.
func (h *handoff) end(t target, tn turn, acquired bool) {
	switch {
	case tn.place == nil:
	case t.keys != nil:
		h.leaveSet(t.keys, tn.place)
	default:
		h.leave(t.key, tn.place, acquired)
	}
}

// next is the hand-off's wait of a Lock call between attempts (R10). The
// call's first wait joins key's queue (subscribing to the key's releases).
// Every wait then ends at the first of:
//   - a release announcement, after its rank's delay and a random jitter of
//     up to one attempt's duration (handoff_rank.go: rank), which keep
//     R10's desynchronizing role between clients;
//   - a hand-over from this client's Unlock;
//   - the timed random delay of R10.
//
// Two kinds of failed attempt change the wait:
//   - A split vote (the attempt set some keys but not a quorum, R10) gave
//     them back unannounced: it wakes the longest waiter other than
//     itself, and a lone waiter never wakes itself out of R10's delay.
//   - An attempt that went at once on an announcement (the first rank) may
//     have reached some node before the release did, and no other
//     announcement of that release will wake it: its timed retry comes one
//     rank slot later (afterFirst), when the node whose announcement woke
//     it granted the attempt or did not answer. When that node says the
//     key is held, the attempt lost to another client, or the announcement
//     was forged (anyone who may PUBLISH on a node can), and one more
//     attempt would be wasted.
//
// A first wait after an attempt that failed while this client released
// the key (tn.mark: releasedMark) ends at once. next returns ctx's error
// when ctx ends, and ErrClosed when the client closes.
func (h *handoff) next(ctx context.Context, t target, o lockOptions, tn turn, elapsed time.Duration, failed *AcquireError) (turn, error) {
	var after waitAfter
	if prev := tn.woke(); prev.remote && prev.slots == 0 && prev.lock == nil && prev.from >= 0 && prev.from < len(failed.Nodes) {
		switch failed.Nodes[prev.from].Outcome {
		case Acquired, NoReply, TimedOut:
			after |= afterFirst
		}
	}
	for _, r := range failed.Nodes {
		if r.Outcome == Acquired {
			after |= afterSplit
			break
		}
	}
	split := after&afterSplit != 0
	w := tn.place
	if w == nil {
		w = newWaiter(ctx, t.resource, o)
		w.split, w.gave = split, tn.value // before it is shared (handoff_subs.go: confirmed)
		h.joinTarget(t, w)                // handoff_queue.go
		tn.place = w
		h.wakeIfReleased(t, w, tn.mark)
	} else {
		h.mu.Lock()
		w.split, w.gave, w.gaveFreed, w.lookPending = split, tn.value, false, false
		h.mu.Unlock()
		for _, key := range t.lockKeys() {
			h.rewatch(key) // its nodes may have stopped answering
		}
	}
	if split {
		for _, key := range t.lockKeys() {
			h.wakeNext(key, w)
		}
	}
	return h.waitTurn(ctx, o, elapsed, after, tn)
}

// waitAfter says what the failed attempt before a wait was (wait).
type waitAfter uint8

const (
	afterNothing waitAfter = 0
	// afterSplit: the attempt set some keys but missed the quorum (a
	// split vote, R10).
	afterSplit waitAfter = 1 << iota
	// afterFirst: the attempt went at once on an announced release, the
	// first of the clients' ranks (handoff_rank.go: rank).
	afterFirst
)

// rankSlot is the length of one rank of the hand-off (handoff_rank.go: rank)
// and the most jitter within it: the jitter is the smoothed round trip of
// the client's fans (rto.go), and the slot adds the round-trip bound that
// TCP would use (srtt + 4 x rttvar), so that an attempt started anywhere
// in the jitter has most likely been decided on the nodes before the next
// rank's starts: two ranks that overlap split the votes (R10), and under
// load an attempt's round trip varies a lot. Clients of the same nodes see
// about the same round trip, so their ranks line up; a client's own last
// attempt would not (a failed attempt is decided later than a granted
// one). Without a sample yet, the last attempt's duration, elapsed, stands
// in for both. Never more than the minimum retry delay (R10).
func (c *Client) rankSlot(elapsed time.Duration, o lockOptions) (slot, jitter time.Duration) {
	slot, jitter = 2*elapsed, elapsed
	if srtt, rttvar, ok := c.rtt.smoothed(); ok {
		slot, jitter = 2*srtt+4*rttvar, srtt
	}
	return min(slot, o.retryMin), min(jitter, o.retryMin)
}

// wait sleeps the timed random delay of R10, or less when w is woken: at
// once after this client's own Unlock (with the lock itself when Unlock
// handed it over); after an announcement from the nodes, at once when no
// client has waited longer, else a slot per client that has (handoff_rank.go:
// rank; rankSlot, each slot at most elapsed, the minimum retry
// delay) and a random jitter within the start of the slot. After a split
// vote (split: the attempt set some keys but missed the quorum), the wait
// at the first rank has the jitter too: the waiters of two clients that
// both took themselves for the first (a client just come, or one passed
// over) went at once, and going at once again could split the votes again
// (R10). After an attempt at the first rank (afterFirst), the timed retry
// is one slot and a jitter (next). A waiter behind the front of its
// queue runs no timed retry until it reaches the front. It returns the
// wake-up it acted on (zero after the timed retry): the lock when Unlock
// handed one over.
func (h *handoff) wait(ctx context.Context, o lockOptions, elapsed time.Duration, after waitAfter, w *waiter) (wake, error) {
	c := h.c
	var promoted <-chan struct{}
	var t *time.Timer
	var timeout <-chan time.Time
	woken := w.ch
	if !w.isHead() {
		promoted = w.head
	}
	// One draw of R10's delay per wait: the timed retry of a waiter at
	// the front, or of one behind it once it reaches the front.
	delay := c.retryDelay(o)
	retry := delay
	if after&afterFirst != 0 {
		slot, jit := c.rankSlot(elapsed, o)
		retry = min(slot+c.jitter(jit), retry)
	}
	if promoted == nil {
		t = time.NewTimer(retry)
		defer t.Stop()
		timeout = t.C
	}
	var wk wake
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return wake{}, ctx.Err()
		case <-c.stop:
			return wake{}, ErrClosed
		case <-timeout:
			return wake{}, nil
		case <-promoted: // now at the front: run the timed retry
			promoted = nil
			t = time.NewTimer(delay)
			defer t.Stop()
			timeout = t.C
		case wk = <-woken:
			done = true
		}
	}
	if !wk.remote {
		return wk, nil
	}
	if wk.slots == 0 && after&afterSplit == 0 {
		// First: no timer, which would cost a whole millisecond in a
		// process with nothing else to run (the runtime sleeps on
		// epoll_wait, to the millisecond).
		return wk, nil
	}
	// Its rank among the clients woken by the same release (handoff.go,
	// rank): a slot per client ahead of it, then a jitter within the
	// start of the slot; never past the minimum retry delay.
	slot, jit := c.rankSlot(elapsed, o)
	j := min(time.Duration(wk.slots)*slot+c.jitter(jit), o.retryMin)
	if j <= 0 {
		return wk, nil
	}
	if t == nil {
		t = time.NewTimer(j)
		defer t.Stop()
	} else {
		if !t.Stop() {
			// A tick of the retry timer that came with the wake-up
			// (GODEBUG=asynctimerchan=1 keeps it) must not end the
			// rank's wait at once.
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(j)
	}
	select {
	case <-ctx.Done():
		return wake{}, ctx.Err()
	case <-c.stop:
		return wake{}, ErrClosed
	case <-t.C:
		return wk, nil
	}
}
