package redlock

import "slices"

// The hand-off's ranking: which clients released a key in which order,
// heard from the tagged values of announced releases, and so which
// client's waiter goes first (handoff.go has the overview).

// turns is what a client heard of the turns the clients took at one key.
type turns struct {
	// heard holds the values of the last releases recorded (heardNext
	// the oldest): every watched node announces each of them, and each
	// counts once, even when a node that lags announces it after a
	// faster node announced the next release.
	heard     [heardReleases]string
	heardNext int
	// order holds the tags (value.go) of the clients whose releases of
	// the key were announced while this client waited, each once, the
	// client that released least recently first: every client hears the
	// same announcements, so every client ranks alike (rank).
	order []string
	// rested counts the keys whose queues emptied, up to this one's
	// (handoff.rests), while this key has none; 0 while it has.
	rested uint64
}

// heardReleases is how many of a key's latest releases a client knows
// the announcements of (turns.heard): an announcement from a node that
// lags more releases behind the fastest one counts again.
const heardReleases = 8

// restKeys is how many keys without waiters keep their turns (rest).
const restKeys = 256

// maxOrder bounds turns.order: a client never ranks its waiter behind
// more clients than that.
const maxOrder = 64

// record notes the announced release of value. The clients ahead of its
// client in the order were passed over (gone, or their attempts lost):
// they are forgotten, and one that still waits ranks first again, as a
// client just come does. A value no client of this package drew (WithValue)
// leaves the order as it is.
func (ts *turns) record(value string) {
	ts.heard[ts.heardNext] = value
	ts.heardNext = (ts.heardNext + 1) % len(ts.heard)
	tag := tagOf(value)
	if tag == "" {
		return
	}
	if i := slices.Index(ts.order, tag); i >= 0 {
		ts.order = append(ts.order[:0], ts.order[i+1:]...)
	}
	if len(ts.order) == maxOrder {
		ts.order = append(ts.order[:0], ts.order[1:]...)
	}
	ts.order = append(ts.order, tag)
}

// seen reports whether the release of value was recorded already: its
// announcement by another node, or a late one (turns.heard).
func (ts *turns) seen(value string) bool {
	return slices.Contains(ts.heard[:], value)
}

// notify handles an announcement from a node: it records the release
// (rank) and wakes the longest-waiting waiter of key (one waiter per
// announcement, so that waiters do not split the votes, R10, and the
// oldest goes first), unless the release was this client's own and its
// waiter was already woken.
func (h *handoff) notify(from int, key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[key]
	ts := h.turns[key]
	if len(q) > 0 {
		if ts == nil {
			ts = &turns{}
			h.turns[key] = ts
		}
		if ts.seen(value) {
			// Every node announces a release: one wake-up is
			// enough. More would make the waiter attempt again
			// after a failure, once per node, and a herd of it.
			return
		}
		ts.record(value)
	}
	if _, own := h.own[value]; own {
		return
	}
	if len(q) > 0 {
		h.give(q[0], wake{remote: true, slots: h.rank(ts), from: from})
	}
	h.wakeSets(key) // handoff_queue.go
}

// ownRelease wakes the longest-waiting waiter of key after this client's
// Unlock released value, and remembers value so that its announcements from
// the nodes do not wake another waiter.
func (h *handoff) ownRelease(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bumpReleased(key)
	h.recordOwn(key, value)
	q := h.queues[key]
	if len(q) == 0 && len(h.sets[key]) == 0 {
		return
	}
	h.wakeSets(key) // handoff_queue.go
	if len(q) == 0 {
		return
	}
	delete(h.own, h.ownRing[h.ownNext])
	h.ownRing[h.ownNext] = value
	h.ownNext = (h.ownNext + 1) % len(h.ownRing)
	h.own[value] = struct{}{}
	h.wake(q[0], false)
}

// yielded wakes the longest-waiting waiter of key after this client's
// Unlock released value, announced to every client's waiters at
// WithHandoffLimit, as the announcement would, unless the announcement
// came first.
func (h *handoff) yielded(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bumpReleased(key)
	if !h.recordOwn(key, value) {
		return
	}
	if q := h.queues[key]; len(q) > 0 {
		h.give(q[0], wake{remote: true, slots: h.rank(h.turns[key]), from: -1})
	}
}

// recordOwn records this client's release of value at key (rank), unless
// its announcement was recorded already, and reports whether it recorded
// it: the announcement comes back from the nodes to a client that waits
// for the key, but a client that released its last waiter's lock no
// longer listens. Called with h.mu held.
func (h *handoff) recordOwn(key, value string) bool {
	ts := h.turns[key]
	if ts == nil || ts.seen(value) {
		return false
	}
	ts.record(value)
	return true
}

// rank is how many rank slots (handoff_wait.go: rankSlot) the longest
// waiter of a key with turns ts lets pass after an announced release
// before its attempt, so that the waiters of several clients woken by one release
// attempt one after another, the client that has waited longest first,
// instead of all at once (R10: in a herd the first to reach the nodes wins
// at random, every other attempt is wasted, and votes may split). Every
// client hears the same announcements, and each value names its client
// (value.go: tagOf), so the order of the clients' last releases (turns.
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
