package redlock

import (
	"context"
	"slices"
	"time"

	"dlm/redlock/adapter"
)

// How a Lock call waits between its attempts (R10), in three parts, in
// this order: the waiting interface through which the acquisition loop
// (client.go: acquire) knows the waits, with the timed random delay of R10
// (timedWait); a Lock call's side of the hand-off, whose queue shortens
// the delay when a release is announced or when this client's Unlock
// hands the lock over; and the hand-off's subscriptions to announced
// releases, run in the background. handoff.go has the hand-off's
// overview, handoff_release.go what a release tells the waiters.

// waiting is how a Lock call waits for its next attempt (R10). One value
// serves every call of a client; what a call keeps between its waits is
// its turn, passed in and out by value.
type waiting interface {
	// first is the wait before a call's first attempt: none, or, with
	// the hand-off, the call's turn behind its client's calls that wait
	// for the same key (no barging). A TryLock never waits.
	first(ctx context.Context, t target, o lockOptions) (turn, error)
	// mark is taken before each attempt, for the wait after it; the
	// attempt's value is value.
	mark(t target, tn turn, value string) uint64
	// next is the wait after a failed attempt, which took elapsed and
	// failed as failed says. It returns ctx's error when ctx ends, and
	// ErrClosed when the client closes; the turn it returns is the call's
	// either way.
	next(ctx context.Context, t target, o lockOptions, tn turn, elapsed time.Duration, failed *AcquireError) (turn, error)
	// end ends the call's waiting; acquired tells whether it got the
	// lock.
	end(t target, tn turn, acquired bool)
	// gaveBack is told that the releases of a failed attempt with value
	// (of key, or a set's keys) are all answered (R8.5). ended: the call
	// that made it ended on it, and its releases deleted keys, given back
	// unannounced: the waiters that failed on them may go.
	gaveBack(key string, keys []string, value string, ended bool)
	// freedOn is told that node i deleted a key (of key, or of a set's
	// keys) that a failed attempt with value gave back (R8.5),
	// unannounced.
	freedOn(key string, keys []string, value string, i int)
	// close ends what the waiting keeps open; called by Client.Close once
	// the background work is done.
	close()
}

// turn is what a Lock call's waiting keeps between its attempts.
type turn struct {
	// lock is a lock handed over to the call by its client's Unlock: the
	// wait ended with it, and the call returns it.
	lock *Lock
	// mark is the waiting's mark, taken before the latest attempt.
	mark uint64
	// value is the latest attempt's value: a key that holds it after
	// the attempt failed is being given back (R8.5), not held.
	value string
	// place is the call's place among its client's waiters (hand-off),
	// nil until it has one.
	place *waiter
}

// timedWait is the waiting without hand-off: the timed random delay of
// R10 after each failed attempt, and no wait before the first.
type timedWait struct{ c *Client }

func (timedWait) first(context.Context, target, lockOptions) (turn, error) { return turn{}, nil }
func (timedWait) mark(target, turn, string) uint64                         { return 0 }
func (timedWait) end(target, turn, bool)                                   {}
func (timedWait) gaveBack(string, []string, string, bool)                  {}
func (timedWait) freedOn(string, []string, string, int)                    {}
func (timedWait) close()                                                   {}

func (w timedWait) next(ctx context.Context, _ target, o lockOptions, _ turn, _ time.Duration, _ *AcquireError) (turn, error) {
	return turn{}, w.c.sleep(ctx, o)
}

// sleep waits the timed random delay of R10. It returns ctx's error when
// ctx ends, and ErrClosed when the client closes.
func (c *Client) sleep(ctx context.Context, o lockOptions) error {
	t := time.NewTimer(c.retryDelay(o))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stop:
		return ErrClosed
	case <-t.C:
		return nil
	}
}

// retryDelay draws the random delay of R10 from [min, max].
func (c *Client) retryDelay(o lockOptions) time.Duration {
	if o.retryMax <= o.retryMin {
		return o.retryMin
	}
	c.rmu.Lock()
	d := o.retryMin + time.Duration(c.rng.Int64N(int64(o.retryMax-o.retryMin)+1))
	c.rmu.Unlock()
	return d
}

// jitter draws a random delay in [0, max].
func (c *Client) jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	c.rmu.Lock()
	d := time.Duration(c.rng.Int64N(int64(max) + 1))
	c.rmu.Unlock()
	return d
}

// A Lock call's side of the hand-off, in the order it runs (a waiting,
// above; handoff.go has the overview): its first wait keeps it from
// barging past its client's calls that wait for the same key (first); it
// joins its key's queue, whose first waiter subscribes the client to the
// key's releases (subscribe; the subscriptions run in the background,
// below); it waits for an announced release, in its rank among
// the clients (rank), for a hand-over from this client's Unlock
// (handoff_release.go), or for the timed random retry of R10, whichever
// comes first (wait); after a failed attempt it waits again (next); and
// it leaves the queue when the call ends (end). What a release tells the
// waiters is in handoff_release.go.

var _ waiting = (*handoff)(nil)

// waiter is one Lock call waiting to retry. ch holds at most one pending
// wake-up. head is closed when the waiter reaches the front of its queue.
// handing is set while this client's Unlock acquires on the waiter's
// behalf: no other wake-up is given to it then.
type waiter struct {
	ch      chan wake
	head    chan struct{}
	handing bool // under handoff.mu
	// split: its last attempt set some keys but missed the quorum (a
	// split vote, R10); under handoff.mu.
	split bool
	// gave is the value of its last failed attempt, whose keys are given
	// back (R8.5), maybe late; gaveFreed is set once they all are
	// (gaveBack); lookPending while the look after subscribing found the
	// key held by gave on node lookFrom and waits for them
	// (confirmed, below). Under handoff.mu.
	gave        string
	gaveFreed   bool
	lookPending bool
	lookFrom    int
	// trying is the value of its attempt under way (mark), "" while it
	// waits (next): a give-back of that value, or of gave while it
	// waits, is its latest attempt's own (freedOn). Under handoff.mu.
	trying string
	// deniedAt is the nodes that did not grant its last failed attempt
	// and have not announced a release since: an announcement from one
	// of them wakes it again, even of a release already heard from
	// another node (handoff_release.go: heard). Nodes past the 64th are
	// not tracked. heardWhen is when each node last announced a release
	// of the key (zero: not since it waits). Under handoff.mu.
	deniedAt  uint64
	heardWhen []time.Time
	// woke is the wake-up that the call's latest wait acted on; only the
	// waiting call reads and writes it (next).
	woke wake

	// The waiting Lock call, for a hand-over on its behalf.
	ctx      context.Context
	resource string
	opts     lockOptions
	// key is the key whose queue it joined (joinQueue); "" for a set.
	key string
}

// wake is one wake-up of a waiter: an announcement from the nodes (remote),
// this client's own Unlock, or a hand-over with the lock itself.
type wake struct {
	remote bool
	lock   *Lock
	// slots is, for an announcement, how many attempt durations the
	// waiter lets pass before its own (rank).
	slots int
	// from is the node whose announcement this is, or -1.
	from int
	// later, for an announcement, is closed when the client records a
	// later release of the key (turns.record): the rank is over.
	later <-chan struct{}
}

// isHead reports whether w is at the front of its queue.
func (w *waiter) isHead() bool {
	select {
	case <-w.head:
		return true
	default:
		return false
	}
}

// newWaiter returns a waiter for a Lock call of resource with options o
// and context ctx, in no queue yet.
func newWaiter(ctx context.Context, resource string, o lockOptions) *waiter {
	return &waiter{ch: make(chan wake, 1), head: make(chan struct{}), ctx: ctx, resource: resource, opts: o}
}

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

// queued reports whether key has waiters in this client.
func (h *handoff) queued(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queues[key]) > 0
}

// joinBehind queues w for key behind the key's waiters, and reports false,
// queueing nothing, when the key has none: looking at the queue and
// joining it are one step, so a release that empties the queue cannot fall
// between them and leave w asleep on R10's delay at the front of a queue
// nobody will wake while the key is free.
func (h *handoff) joinBehind(key string, w *waiter) bool {
	return h.joinQueue(key, w, true)
}

// join queues w for key, subscribing to key's releases on every node when
// it is the key's first waiter.
func (h *handoff) join(key string, w *waiter) {
	h.joinQueue(key, w, false)
}

// joinQueue is join and joinBehind.
func (h *handoff) joinQueue(key string, w *waiter, behind bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	if behind && len(q) == 0 {
		return false
	}
	h.queues[key] = append(q, w)
	w.key = key
	if len(q) == 0 {
		if ts := h.turns[key]; ts != nil {
			ts.rested = 0
		}
		close(w.head)
		if len(h.sets[key]) == 0 {
			h.subscribe(key, true)
		}
	}
	return true
}

// HandoffWatchNodes is how many nodes a client listens to for the
// announced releases of a resource it waits for (when it has that many
// adapter.HandoffNodes). Every node announces every release, so one would
// do while it is up; a second keeps the hand-off working while one node is
// down, and the client picks nodes that answered it lately (the timed retry
// of R10 covers the rest). Listening on every node cost more than it
// gained: each release woke every waiting client once per node, all at the
// same instant, and on a busy machine the release itself then took twice
// as long (8 OS processes x 4 workers on 5 redis-server nodes, 2 cores:
// 675-679 critical sections/s listening on 5 nodes, 668-696 on 3, 717-731
// on 2, 733-740 on 1; cd bench && go run . -only mp).
const HandoffWatchNodes = 2

// subscribe queues a Watch (on) or Unwatch of key on the nodes that listen
// for its releases (watchSet); one goroutine per node runs its queue in
// order. Called with h.mu held.
func (h *handoff) subscribe(key string, on bool) {
	if h.closed {
		return
	}
	var at []int
	var gen uint64
	if on {
		at = h.watchSet(key, 0, nil)
		h.watched[key] = at
		h.subGen++
		gen = h.subGen
		h.fresh[key] = gen
	} else {
		at = h.watched[key]
		delete(h.watched, key)
		delete(h.fresh, key)
	}
	for _, i := range at {
		h.queueSub(i, subOp{key: key, on: on, gen: gen})
	}
}

// watchSet returns the nodes to listen on for key's releases:
// HandoffWatchNodes of the capable nodes, taken in order from one chosen by
// key's hash (so that many keys' subscriptions spread over the nodes),
// better ones first: a node in held (rewatch), then one that answered this
// client within the last limit (one that did not may be down, and would
// announce nothing), one it listens on already (in old) first among those
// alike, so that a subscription moves only for a better node. Called with
// h.mu held.
func (h *handoff) watchSet(key string, held uint64, old []int) []int {
	n := len(h.nodes)
	first := int(keyHash(key) % uint32(n))
	recent := time.Since(h.c.born) - timeoutLimit(h.c.opts.nodeTimeout, 0)
	var classes [5][]int
	for k := range n {
		i := (first + k) % n
		if h.nodes[i] == nil {
			continue
		}
		up := h.c.heard[i].Load() > max(int64(recent), 0) // 0: never
		listens := slices.Contains(old, i)
		class := 4
		switch {
		case i < 64 && held&(1<<i) != 0:
			class = 0
		case up && listens:
			class = 1
		case up:
			class = 2
		case listens:
			class = 3
		}
		classes[class] = append(classes[class], i)
	}
	var all []int
	for _, c := range classes {
		all = append(all, c...)
	}
	return all[:min(HandoffWatchNodes, len(all))]
}

// keyHash is the 32-bit FNV-1a hash of key.
func keyHash(key string) uint32 {
	x := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		x ^= uint32(key[i])
		x *= 16777619
	}
	return x
}

// waitTurn is wait for the call whose turn is tn: the wake-up it acted on
// stays with its waiter (for the next call of next), and a lock handed
// over ends the call.
func (h *handoff) waitTurn(ctx context.Context, o lockOptions, elapsed time.Duration, after waitAfter, tn turn) (turn, error) {
	wk, err := h.wait(ctx, o, elapsed, after, tn.place)
	tn.place.woke, tn.lock = wk, wk.lock
	return tn, err
}

// wait sleeps the timed random delay of R10, or less when w is woken: at
// once after this client's own Unlock (with the lock itself when Unlock
// handed it over); after an announcement from the nodes, at once when no
// client has waited longer, else a slot per client that has (rank;
// rankSlot, each slot at most elapsed, the minimum retry delay) and a
// random jitter within the start of the slot. After a split
// vote (split: the attempt set some keys but missed the quorum), the wait
// at the first rank has the jitter too: the waiters of two clients that
// both took themselves for the first (a client just come, or one passed
// over) went at once, and going at once again could split the votes again
// (R10). After an attempt at the first rank (afterFirst), the timed retry
// comes within that rank's slot: the slot less two attempt durations, so
// that it is decided before the second rank's attempt (next). A later
// release ends the wait of an earlier one's rank (rankWait). A waiter
// behind the front of its queue runs no timed retry until it reaches the
// front. It returns the wake-up it acted on (zero after the timed retry):
// the lock when Unlock handed one over.
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
		slot, _ := c.rankSlot(elapsed, o)
		retry = min(max(slot-2*elapsed, 0), retry)
	}
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	if promoted == nil {
		t = time.NewTimer(retry)
		timeout = t.C
	}
	for {
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
				if t == nil {
					t = time.NewTimer(delay)
				} else {
					t.Reset(delay)
				}
				timeout = t.C
			case wk = <-woken:
				done = true
			}
		}
		if !wk.remote {
			return wk, nil
		}
		wk, over, err := h.rankWait(ctx, o, elapsed, after, w, wk, &t)
		if !over || err != nil {
			return wk, err
		}
		// Woken for a release that a later one followed, whose wake-up
		// went to another waiter of its client: it waits again, with
		// R10's timed retry at the front of its queue. A waiter behind
		// the front (woken by a split vote: wakeNext) may have no timer.
		timeout, promoted = nil, nil
		switch {
		case !w.isHead():
			if t != nil {
				stopTimer(t)
			}
			promoted = w.head
		case t == nil:
			t = time.NewTimer(delay)
			timeout = t.C
		default:
			stopTimer(t)
			t.Reset(delay)
			timeout = t.C
		}
	}
}

// rankWait waits out w's rank of the announced release wk (rank): none
// for the first rank (nor a jitter, unless after a split vote), else a
// slot per client ahead of it and a jitter within the start of the slot,
// never past the minimum retry delay. A later release announced while it
// waits ends the rank: the waiter takes its rank of the later release,
// counted from then, when that wake-up came to it, and rankWait reports
// over when it went to another waiter of its client. A wake-up from this
// client's Unlock ends the wait. *t is the wait's timer (nil: none yet).
func (h *handoff) rankWait(ctx context.Context, o lockOptions, elapsed time.Duration, after waitAfter, w *waiter, wk wake, t **time.Timer) (_ wake, over bool, _ error) {
	c := h.c
	for {
		select {
		case <-wk.later:
			// A later release was recorded since it was woken, and
			// its wake-up went to the front of its queue.
			return wk, true, nil
		default:
		}
		if wk.slots == 0 && after&afterSplit == 0 {
			// First: no timer, which would cost a whole millisecond in a
			// process with nothing else to run (the runtime sleeps on
			// epoll_wait, to the millisecond).
			return wk, false, nil
		}
		slot, jit := c.rankSlot(elapsed, o)
		j := min(time.Duration(wk.slots)*slot+c.jitter(jit), o.retryMin)
		if j <= 0 {
			return wk, false, nil
		}
		if *t == nil {
			*t = time.NewTimer(j)
		} else {
			// A tick of the retry timer that came with the wake-up
			// (GODEBUG=asynctimerchan=1 keeps it) must not end the
			// rank's wait at once.
			stopTimer(*t)
			(*t).Reset(j)
		}
		var next wake
		select {
		case <-ctx.Done():
			return wake{}, false, ctx.Err()
		case <-c.stop:
			return wake{}, false, ErrClosed
		case <-(*t).C:
			return wk, false, nil
		case next = <-w.ch:
		case <-wk.later:
			// A later release was recorded (a hand-over in the
			// holder's client releases the key too): this rank is
			// over. The wake-up given with the record went to this
			// waiter, or to the front of its queue.
			select {
			case next = <-w.ch:
			default:
				return wk, true, nil
			}
		}
		if !next.remote {
			return next, false, nil
		}
		wk = next
	}
}

// stopTimer stops t and drains a tick it sent already.
func stopTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
}

// waitAfter says what the failed attempt before a wait was (wait).
type waitAfter uint8

const (
	afterNothing waitAfter = 0
	// afterSplit: the attempt set some keys but missed the quorum (a
	// split vote, R10).
	afterSplit waitAfter = 1 << iota
	// afterFirst: the attempt went at once on an announced release, the
	// first of the clients' ranks (rank).
	afterFirst
)

// rankSlot is the length of one rank of the hand-off (rank)
// and the most jitter within it: the jitter is the smoothed round trip of
// the client's fans (timeout.go), and the slot adds the round-trip bound that
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

// rank is how many rank slots (rankSlot) the longest
// waiter of a key with turns ts lets pass after an announced release
// before its attempt, so that the waiters of several clients woken by one release
// attempt one after another, the client that has waited longest first,
// instead of all at once (R10: in a herd the first to reach the nodes wins
// at random, every other attempt is wasted, and votes may split). Every
// client hears the same announcements, and each value names its client
// (client.go: tagOf), so the order of the clients' last releases (turns.
// order) is the same in every client: a client lets pass one slot per
// client that released before it did, the client that released least
// recently goes at once, the one that just released last. A client whose
// release was not heard since it waits (new to the key, or passed over)
// has waited longest: it goes at once. So does a client alone at the key,
// except after its own release, when it lets one slot pass, so that a
// rival it did not know of, going at once, reaches the nodes first. The
// ladder is the same for every client however many clients share the key
// (a ladder of fixed length made two or three clients wait most of the
// minimum retry delay at every turn). Called with h.mu held.
func (h *handoff) rank(ts *turns) int {
	if ts == nil {
		return 0
	}
	switch i := slices.Index(ts.order, h.c.values.tag); {
	case i < 0:
		return 0
	case i == len(ts.order)-1:
		return max(i, 1) // its own release was the last one heard
	default:
		return i
	}
}

// mark is releasedMark, taken before each attempt; a waiter notes the
// attempt's value (waiter.trying).
func (h *handoff) mark(t target, tn turn, value string) uint64 {
	if w := tn.place; w != nil {
		h.mu.Lock()
		w.trying = value
		h.mu.Unlock()
	}
	return h.releasedMark(t)
}

// releasedMark returns a mark of this client's releases of t's keys so far
// (0 without a hand-off). Lock takes it before each attempt: a release of
// the key by this client between the attempt and the waiter's joining the
// queue woke nobody (the queue was empty), and the waiter, once it joined,
// retries at once instead of sleeping out R10's delay while the key is
// free (wakeIfReleased). Keys that share a slot only cost an attempt.
func (h *handoff) releasedMark(t target) uint64 {
	if h == nil {
		return 0
	}
	if t.keys == nil { // one key: every Lock attempt takes this mark
		return h.released[keyHash(t.key)%uint32(len(h.released))].Load()
	}
	var m uint64
	for _, key := range t.keys {
		m += h.released[keyHash(key)%uint32(len(h.released))].Load()
	}
	return m
}

// next is the hand-off's wait of a Lock call between attempts (R10). The
// call's first wait joins key's queue (subscribing to the key's releases).
// Every wait then ends at the first of:
//   - a release announcement, after its rank's delay and a random jitter of
//     up to one attempt's duration (rank), which keep
//     R10's desynchronizing role between clients;
//   - a hand-over from this client's Unlock;
//   - the timed random delay of R10.
//
// Two kinds of failed attempt change the wait:
//   - A split vote (the attempt set some keys but not a quorum, R10) gave
//     them back unannounced: it wakes the longest waiter other than
//     itself, and a lone waiter never wakes itself out of R10's delay.
//   - An attempt that went at once on an announcement (the first rank) may
//     have reached some node before the release did. A node it listens to
//     wakes it again when it announces that release (handoff_release.go:
//     heard); for the nodes it does not listen to, its timed retry comes
//     within its rank's slot (afterFirst: the slot less two attempt
//     durations, decided before the next rank's attempt), when the node
//     whose announcement woke it granted the attempt or did not answer; a
//     retry that meets that attempt's own key, given back late, is woken
//     when the key is gone (handoff_release.go: freedOn). When that node
//     says the key is held, the attempt lost to another client, or the
//     announcement was forged (anyone who may PUBLISH on a node can), and
//     one more attempt would be wasted.
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
	// The nodes that did not grant the attempt (denied), and those of
	// them that said the key is held (held).
	var denied, held uint64
	for i, r := range failed.Nodes {
		switch {
		case i >= 64 || r.Outcome == Acquired:
		case r.Outcome == Held:
			held |= 1 << i
			fallthrough
		default:
			denied |= 1 << i
		}
	}
	w := tn.place
	if w == nil {
		w = newWaiter(ctx, t.resource, o)
		w.split, w.gave, w.deniedAt = split, tn.value, denied // before it is shared (confirmed, below)
		h.joinTarget(t, w)
		tn.place = w
		h.wakeIfReleased(t, w, tn.mark)
	} else {
		now := time.Now()
		h.mu.Lock()
		w.split, w.gave, w.gaveFreed, w.lookPending, w.trying = split, tn.value, false, false, ""
		w.deniedAt = denied
		h.wakeIfCrossed(t, w, now.Add(-elapsed))
		// A release announced lately may still be on its way to the
		// nodes that hold (rewatch); the holder gives up on a node
		// after its node timeout, at most the limit.
		if !slices.ContainsFunc(w.heardWhen, func(at time.Time) bool {
			return now.Sub(at) < timeoutLimit(h.c.opts.nodeTimeout, 0)
		}) {
			held = 0
		}
		h.mu.Unlock()
		for _, key := range t.lockKeys() {
			h.rewatch(key, held) // its nodes may have stopped answering, or hold no more
		}
	}
	if split {
		for _, key := range t.lockKeys() {
			h.wakeNext(key, w)
		}
	}
	return h.waitTurn(ctx, o, elapsed, after, tn)
}

// wakeIfCrossed wakes w, whose attempt for t begun at start just failed,
// when a node that did not grant it (deniedAt) announced a release of the
// key after the attempt began: the attempt may have reached the node
// before the release did, and the announcement, of a release maybe heard
// already from another node, came while w was attempting (heard). (The
// answer and the announcement come on different connections, in either
// order.) The copies of one announcement from several nodes that came
// before the attempt began wake nothing more; a forged one that reaches
// the nodes while the attempt runs costs an attempt per node w listens
// on. Called with h.mu held.
func (h *handoff) wakeIfCrossed(t target, w *waiter, start time.Time) {
	for i, at := range w.heardWhen {
		if w.deniedAt&(1<<i) != 0 && at.After(start) {
			h.wakeFrom(t.key, w, t.keys != nil, i)
			return
		}
	}
}

// woke is the wake-up that the call's latest wait acted on, if it waited.
func (tn turn) woke() wake {
	if tn.place == nil {
		return wake{}
	}
	return tn.place.woke
}

// joinTarget makes the waiter of a Lock or LockAll call after its first
// failed attempt: in its key's queue for one resource (join), or among the
// waiters of a set.
func (h *handoff) joinTarget(t target, w *waiter) {
	if t.keys == nil {
		h.join(t.key, w)
		return
	}
	// A set's waiter stands in no queue: it would hold up the waiters of
	// one of its keys while another key is held. It runs its timed retry
	// (R10) at once, as the front of a queue does, and is woken early by
	// the release of any of its keys; Unlock never hands a lock over to it
	// (handOver looks at the queues only), so a set is never handed one
	// key of its set.
	close(w.head)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, key := range t.keys {
		if len(h.queues[key]) == 0 && len(h.sets[key]) == 0 {
			h.subscribe(key, true)
		}
		h.sets[key] = append(h.sets[key], w)
	}
}

// wakeIfReleased wakes w, which just joined the queue of t's key (or its
// set's waiters), when this client released one of t's keys since mark.
func (h *handoff) wakeIfReleased(t target, w *waiter, mark uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.releasedMark(t) != mark {
		h.give(w, wake{})
	}
}

// wakeNext wakes the longest-waiting waiter of key other than self, as an
// announcement from the nodes would.
func (h *handoff) wakeNext(key string, self *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.queues[key] {
		if w != self {
			h.give(w, wake{remote: true, slots: h.rank(h.turns[key]), from: -1})
			return
		}
	}
}

// wakeFrom wakes w as node from's announcement of a release of key
// would: after the look after subscribing found the key free there
// (confirmed, below), or when the node announced a release that
// w's last attempt, begun before it reached the node, found still held
// (handoff_release.go: heard). It goes in its client's rank, with a jitter
// when its last attempt split the votes (wait), which keeps the next
// split away as R10's delay does; an attempt that goes at once on it and
// fails may have reached another node before the release it was woken
// for (next: afterFirst). set: w waits for a set, and goes at once (with
// a jitter after a split). Called with h.mu held.
func (h *handoff) wakeFrom(key string, w *waiter, set bool, from int) {
	if set {
		h.wake(w, true)
		return
	}
	h.give(w, wake{remote: true, slots: h.rank(h.turns[key]), from: from})
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

// leave removes w from key's queue; the last waiter unsubscribes. A wake-up
// w had not used is dropped (it is usually a late announcement of the
// release w itself acquired after), except a lock handed to w, which is
// unlocked (and so handed on). A waiter that leaves without the lock wakes
// the next one.
func (h *handoff) leave(key string, w *waiter, acquired bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var handed *Lock
	select {
	case wk := <-w.ch:
		handed = wk.lock
	default:
	}
	q := h.queues[key]
	for i, x := range q {
		if x == w {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if handed != nil {
		// Handed to w, which left first: unlocked in the background (it
		// takes h.mu), after w is out of the queue.
		h.c.drop(handed)
	}
	if len(q) == 0 {
		delete(h.queues, key)
		h.rest(key)
		if len(h.sets[key]) == 0 {
			h.subscribe(key, false)
		}
		return
	}
	h.queues[key] = q
	if !q[0].isHead() {
		close(q[0].head)
	}
	if !acquired && handed == nil && !w.handing {
		// w may have been woken and given up (its context ended): pass
		// the turn on, lest the next waiter sleep out its timed retry
		// while the lock is free. At worst one futile attempt.
		h.wake(q[0], false)
	}
}

// rest keeps the turns of key, whose queue just emptied, for when the
// client waits for it again; beyond restKeys such keys, the half that
// rested longest forget theirs. Called with h.mu held.
func (h *handoff) rest(key string) {
	ts := h.turns[key]
	if ts == nil {
		return
	}
	h.rests++
	ts.rested = h.rests
	if len(h.turns) <= len(h.queues)+restKeys {
		return
	}
	keep := h.rests - restKeys/2
	for k, t := range h.turns {
		if len(h.queues[k]) == 0 && t.rested <= keep {
			delete(h.turns, k)
		}
	}
}

// leaveSet takes a set's waiter w out of the waiters of keys; the last
// waiter of a key unsubscribes from it.
func (h *handoff) leaveSet(keys []string, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, key := range keys {
		s := slices.DeleteFunc(h.sets[key], func(x *waiter) bool { return x == w })
		if len(s) > 0 {
			h.sets[key] = s
			continue
		}
		delete(h.sets, key)
		if len(h.queues[key]) == 0 {
			h.subscribe(key, false)
		}
	}
}

// wake gives w a wake-up unless it has one or a hand-over to it is under
// way; called with h.mu held.
func (h *handoff) wake(w *waiter, remote bool) {
	h.give(w, wake{remote: remote, from: -1})
}

// give gives w the wake-up wk unless it has one or a hand-over to it is
// under way; called with h.mu held.
func (h *handoff) give(w *waiter, wk wake) {
	if w.handing {
		return
	}
	// It attempts again: what its last attempt found no longer matters
	// (heard).
	w.deniedAt = 0
	if wk.remote && w.key != "" {
		wk.later = h.turns[w.key].laterRelease()
	}
	select {
	case w.ch <- wk:
		return
	default:
	}
	if wk.remote {
		// An announcement not acted on yet gives way to a later one
		// (rankWait); this client's Unlock's wake-up is kept.
		select {
		case old := <-w.ch:
			if !old.remote {
				wk = old
			}
		default:
		}
		w.ch <- wk
	}
}

// testSeam is what a test may carry in the context of a call (see
// export_test.go) to run code at points of an acquisition that no node
// sees: when a Lock call is about to look for the waiters ahead of it in
// its client (turn, in first above), and between the two phases of a
// fenced acquisition (phase, fencing.go). No production call carries one,
// and no production type holds one.
type testSeam struct {
	phase func(resource string)
	turn  func(resource string)
}

// seamKey is the context key of a testSeam.
type seamKey struct{}

// seamOf returns the testSeam that ctx carries, or nil.
func seamOf(ctx context.Context) *testSeam {
	s, _ := ctx.Value(seamKey{}).(*testSeam)
	return s
}

// The hand-off's subscriptions in the background (handoff.go has the
// overview): the per-node queue of the Watch and Unwatch calls that a
// key's waiters ask for (subscribe, above), the goroutine that
// runs it, and the look at the key once a subscription is confirmed.

// handoffSubscribeTimeout bounds one SUBSCRIBE or UNSUBSCRIBE of the
// hand-off, which runs in the background.
const handoffSubscribeTimeout = time.Second

// A SUBSCRIBE that fails (the subscription's connection could not be made,
// or broke, or the node did not answer in time) is tried again this many
// times in all, after handoffSubscribeRetry, then twice as long each time:
// a waiter that listens on none of its nodes hears of no release and
// sleeps out its timed retry (R10), and most such failures last less than
// a second (a first connection on a busy machine, a node restarting).
const (
	handoffSubscribeTries = 4
	handoffSubscribeRetry = 50 * time.Millisecond
)

// subQueue is one node's pending Watch and Unwatch calls, run in order by
// one goroutine at a time, so that an Unwatch never overtakes the Watch
// that follows it.
type subQueue struct {
	ops     []subOp
	running bool
}

type subOp struct {
	key string
	on  bool
	gen uint64 // of a Watch: its subscription's generation (fresh)
}

// queueSub queues op, a Watch or Unwatch, on node i, starting the node's
// goroutine (runSubs) unless it runs. Called with h.mu held.
func (h *handoff) queueSub(i int, op subOp) {
	s := &h.subs[i]
	s.ops = append(s.ops, op)
	if s.running || !h.c.bgAdd(1) {
		return
	}
	s.running = true
	go h.runSubs(i, h.nodes[i])
}

// rewatch moves key's subscriptions, while it has waiters, to better
// nodes, as watchSet ranks them now: the nodes chosen when its first
// waiter joined may have stopped answering since (down, frozen), and
// announce nothing, and a queue that never empties would keep them for
// good, its waiters woken by their timed retries alone (R10). And when an
// attempt woken by an announced release found the key still held (held)
// on none of the nodes it listens on, the release reached those first and
// is still on its way to the others (slow to apply it): the subscription
// moves to nodes that held, which will announce it, and whose look
// (confirmed) finds it if it came first. Called by a waiter after each
// failed attempt, which is what tells the client which nodes answer and
// hold; nothing changes while the chosen nodes answer.
func (h *handoff) rewatch(key string, held uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old, ok := h.watched[key]
	if !ok || h.closed {
		return
	}
	for _, i := range old {
		if i < 64 && held&(1<<i) != 0 {
			held = 0 // one it listens on will announce the release (heard)
			break
		}
	}
	at := h.watchSet(key, held, old)
	if len(at) == len(old) && !slices.ContainsFunc(at, func(i int) bool { return !slices.Contains(old, i) }) {
		return
	}
	h.watched[key] = at
	h.subGen++
	gen := h.subGen
	h.fresh[key] = gen // the new nodes look at the key (confirmed)
	for _, i := range old {
		if !slices.Contains(at, i) {
			h.queueSub(i, subOp{key: key})
		}
	}
	for _, i := range at {
		if !slices.Contains(old, i) {
			h.queueSub(i, subOp{key: key, on: true, gen: gen})
		}
	}
}

// runSubs runs node i's queue of Watch and Unwatch calls, in order, until
// it is empty or the client closes; a Watch that fails is tried again
// (handoffSubscribeTries) before the next call.
func (h *handoff) runSubs(i int, n adapter.HandoffNode) {
	defer h.c.bg.Done()
	for {
		h.mu.Lock()
		s := &h.subs[i]
		if len(s.ops) == 0 || h.closed || h.c.isClosed() {
			s.ops, s.running = nil, false
			h.mu.Unlock()
			return
		}
		op := s.ops[0]
		s.ops = s.ops[1:]
		h.mu.Unlock()
		delay := handoffSubscribeRetry
		for try := 1; !h.runSub(i, n, op) && try < handoffSubscribeTries && h.pause(delay) && h.stillWatched(i, op.key); try++ {
			delay *= 2
		}
	}
}

// runSub runs op, a Watch or Unwatch, on node i, and reports whether it
// is done: false when a Watch failed (an Unwatch that fails leaves a
// subscription that announces releases nobody waits for).
func (h *handoff) runSub(i int, n adapter.HandoffNode, op subOp) bool {
	w, err := h.watch(i, n)
	if err != nil {
		return !op.on
	}
	ctx, cancel := context.WithTimeout(context.Background(), handoffSubscribeTimeout)
	defer cancel()
	if !op.on {
		_ = w.Unwatch(ctx, op.key)
		return true
	}
	if w.Watch(ctx, op.key) != nil {
		return false
	}
	h.confirmed(ctx, i, n, op)
	return true
}

// pause waits d, and reports false when the client closed meanwhile.
func (h *handoff) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.c.stop:
		return false
	}
}

// stillWatched reports whether key is still to be watched on node i: the
// client is open, key's subscription still has node i, and no later
// Watch or Unwatch of key is queued there (it runs next instead of a
// retry, which would overtake it).
func (h *handoff) stillWatched(i int, key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || !slices.Contains(h.watched[key], i) {
		return false
	}
	return !slices.ContainsFunc(h.subs[i].ops, func(op subOp) bool { return op.key == key })
}

// confirmed is told that node n (node i) now delivers key's announced
// releases (op, a Watch). On each node of the subscription made when key's
// waiters began to listen (subscribe) or moved to other nodes (rewatch),
// the release they wait for may have come after their failed attempt and
// before anybody listened, announced to nobody: they would sleep out R10's
// delay while the key is free. So the node is asked for the key
// (adapter.InspectNode), and the longest waiter is woken when the key is
// free there (wakeFrom); a key still held will most likely be released
// under the subscription, and announced. Every node of the subscription
// looks, not only the first to confirm: the holder's release may reach
// one node late or not at all (it timed out on a busy node, and the key
// lives out its ttl, announced to nobody) while the others are free;
// the waiter is then woken at most once more than it needs. A key held
// by the failed attempt of the waiter to wake (gave) is free once that
// attempt's releases (R8.5) are answered: the attempt may have reached n
// after the release, and n answered it late. The waiter is woken then
// (gaveBack), or now if they are. The look counts as node i's
// announcement of the release (wakeFrom). Without InspectNode, the
// timed retry covers the gap (adapter.ReleaseWatch).
func (h *handoff) confirmed(ctx context.Context, i int, n adapter.HandoffNode, op subOp) {
	key := op.key
	h.mu.Lock()
	gen, fresh := h.fresh[key]
	fresh = fresh && gen == op.gen // not a Watch that an Unwatch follows
	h.mu.Unlock()
	in, ok := n.(adapter.InspectNode)
	if !fresh || !ok {
		return
	}
	st, err := in.Inspect(ctx, key)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	look := func(w *waiter, set bool) {
		switch {
		case st.Kind == adapter.KeyAbsent:
		case st.Kind == adapter.KeyLock && w.gave != "" && st.Value == w.gave:
			if !w.gaveFreed {
				w.lookPending, w.lookFrom = true, i // woken by gaveBack
				return
			}
		default:
			return // held: its release will be announced
		}
		h.wakeFrom(key, w, set, i)
	}
	if q := h.queues[key]; len(q) > 0 {
		look(q[0], false)
	}
	for _, w := range h.sets[key] {
		look(w, true)
	}
}

// watch returns node i's subscription, opening it on first use.
func (h *handoff) watch(i int, n adapter.HandoffNode) (adapter.ReleaseWatch, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.watches[i] != nil {
		return h.watches[i], nil
	}
	w, err := n.WatchReleases(func(key, value string) { h.notify(i, key, value) })
	if err != nil {
		return nil, err
	}
	h.watches[i] = w
	return w, nil
}
