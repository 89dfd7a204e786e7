package redlock

import "context"

// WithPhaseHook returns ctx carrying hook, which a fenced acquisition made
// with it runs between phase 1 and phase 2, so that a test can freeze a
// client there.
func WithPhaseHook(ctx context.Context, hook func(resource string)) context.Context {
	s := &testSeam{phase: hook}
	if old := seamOf(ctx); old != nil {
		s.turn = old.turn
	}
	return context.WithValue(ctx, seamKey{}, s)
}

// WithTurnHook returns ctx carrying hook, which a Lock call made with it
// runs when it is about to look for waiters ahead of it in its client.
func WithTurnHook(ctx context.Context, hook func(resource string)) context.Context {
	s := &testSeam{turn: hook}
	if old := seamOf(ctx); old != nil {
		s.phase = old.phase
	}
	return context.WithValue(ctx, seamKey{}, s)
}

// Settle runs fn as a settler of c (Client.settle), as the hand-off does
// for what a Lock call left behind.
func Settle(c *Client, fn func()) bool { return c.settle(false, fn) }

// Closing reports whether Close has begun on c.
func Closing(c *Client) bool { return c.isClosed() }

// Queued reports whether a Lock call of c waits in the hand-off queue of
// resource (it failed an attempt and waits for a release or a hand-over).
func Queued(c *Client, resource string) bool {
	return c.hand != nil && c.hand.queued(c.one(resource).key)
}

// RawValue returns l's value without reading it as Value does: a value
// read is never kept by a hand-over, and Value of a lock that was kept
// returns "".
func RawValue(l *Lock) string { return l.value }

// HandoffState returns how many keys c's hand-off keeps turns for, keys it
// listens on, keys with queued waiters, and own release values it
// remembers.
func HandoffState(c *Client) (turns, watched, queues, own int) {
	if c.hand == nil {
		return 0, 0, 0, 0
	}
	h := c.hand
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.turns), len(h.watched), len(h.queues), len(h.own)
}

// RestKeys is restKeys: how many keys without waiters keep their turns.
const RestKeys = restKeys

// WatchNodes returns the nodes c's hand-off would listen on now for the
// releases of resource, in order.
func WatchNodes(c *Client, resource string) []int {
	h := c.hand
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watchSet(c.one(resource).key, 0, nil)
}
