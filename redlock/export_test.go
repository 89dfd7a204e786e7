package redlock

// SetPhaseHook makes c call hook between phase 1 and phase 2 of every fenced
// acquisition, so that a test can freeze a client there. Set it before the
// client is used.
func SetPhaseHook(c *Client, hook func(resource string)) { c.phaseHook = hook }

// SetTurnHook sets the hook a Lock call runs when it is about to look for
// waiters ahead of it in its client.
func SetTurnHook(c *Client, hook func(resource string)) { c.turnHook = hook }

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
	return h.watchSet(c.one(resource).key)
}
