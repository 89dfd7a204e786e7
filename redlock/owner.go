package redlock

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"
)

// Owner labels: who holds a lock, for operators (dlm
// status, Client.Inspect), never derived from the lock's value.
//
// The label is kept once per client on each node, not once per lock, so
// that Lock and Unlock send no command more than before: every value a
// client draws starts with its tag (client.go: valueSource; 6 random bytes
// drawn once per client), and the client keeps a note "owner:"+tag under
// WithInfoPrefix on every node it heard from lately, with its label. It
// writes the note in the background after a grant or an extension whose
// validity ends later than the note covers (a minute later, when a node
// was left out), so that the note outlives every lock the client holds:
// its life is twice the longest validity it covers, at least a minute and
// at most twice WithMaxTTL. A process that takes one short lock and exits
// (a cron job every minute) so leaves one short note per run, not one of
// a day or two. Inspect reads the tag of
// the value it found (inside the client: it never shows a byte of the
// value, the tag included) and the note under it. A value of the caller's
// (WithValue) has no tag: its owner shows as unknown; so does the owner of
// a client over nodes that are not adapter.InspectNodes.

// maxOwnerLen bounds an owner label, in bytes.
const maxOwnerLen = 200

// WithOwner sets the owner label of the client's locks, shown by
// Client.Inspect and dlm status: who holds a lock, for an operator. It is
// public (any client can read it) and is not a secret; it must be 1 to 200
// bytes of printable characters (no control characters). Default: the
// host name and the process id, as "host pid 1234".
func WithOwner(label string) Option {
	return clientOption(func(o *clientOptions) { o.owner, o.ownerSet = label, true })
}

// defaultOwner is the default label: the host name and the process id.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return host + " pid " + strconv.Itoa(os.Getpid())
}

// checkOwner refuses a label that WithOwner does not accept.
func checkOwner(label string) error {
	switch {
	case label == "":
		return invalidf("owner label is empty; give 1 to %d printable characters", maxOwnerLen)
	case len(label) > maxOwnerLen:
		return invalidf("owner label is %d bytes; it must be at most %d", len(label), maxOwnerLen)
	}
	for _, r := range label {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return invalidf("owner label has a control or invalid character %q; use printable characters", r)
		}
	}
	return nil
}

// ownerNote is the key of the owner note of the client with tag.
func (c *Client) ownerNote(tag string) string { return c.opts.infoPrefix + "owner:" + tag }

// minOwnerLife is the shortest life of an owner note.
const minOwnerLife = time.Minute

// ownerLife is how long an owner note written now lives on the nodes, to
// cover a lock whose validity ends left from now: twice that, between
// minOwnerLife and twice WithMaxTTL.
func (c *Client) ownerLife(left time.Duration) time.Duration {
	return min(max(2*left, minOwnerLife), 2*c.opts.maxTTL)
}

// noteOwner writes the client's owner note on every node, in the
// background, when a lock's validity, granted or extended at at, ends
// (until) after what the note written last covers, which its caller
// (life.go: noteOwnerIfDue) checked first and this checks again under a
// compare-and-swap, so that one grant of many writes it: no request on
// the path of a grant or an extension. The note written covers every
// lock that ends within half its life.
func (c *Client) noteOwner(at, until time.Time) {
	now, end := int64(at.Sub(c.born)), int64(until.Sub(c.born))
	life := c.ownerLife(until.Sub(at))
	due := c.ownerDue.Load()
	if end < due || !c.ownerDue.CompareAndSwap(due, now+int64(life/2)) {
		return
	}
	all := c.infoNodes()
	if all == nil {
		return
	}
	// Only the nodes heard from lately (timeout.go: Client.heard): the note
	// matters where the client's keys are, and a node that is down is
	// not dialled for it (an adapter's pool may log each failed dial).
	// When one is left out, the note is due again in a minute.
	since := int64(at.Sub(c.born) - timeoutLimit(c.opts.nodeTimeout, 0))
	var nodes []adapterInspect
	for i, n := range all {
		if h := c.heard[i].Load(); h > 0 && h > since {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) < len(all) {
		c.ownerDue.Store(now + int64(time.Minute))
	}
	if len(nodes) == 0 {
		return
	}
	key, label := c.ownerNote(c.values.tag), c.opts.owner
	c.settle(false, func() {
		c.onEveryNode(context.Background(), nodes, func(ctx context.Context, _ int, n adapterInspect) {
			_ = n.PutNote(ctx, key, label, life)
		})
	})
}

// keepOwnerNote keeps the owner note of another client, the one whose tag
// the value of a resumed lock carries (Resume), alive while this client
// extends the lock until until: in the background, it reads the note's
// label and writes it again to live as long as a note of this client
// would (ownerLife). Without it the acquirer's note, sized for the
// validity it knew, expires while the lock is held, and status shows "an
// unknown owner", which an operator reads as a dead holder. A note that
// is gone already stays gone: no label is made up.
func (c *Client) keepOwnerNote(value string, at, until time.Time) {
	tag := tagOf(value)
	all := c.infoNodes()
	if tag == "" || tag == c.values.tag || all == nil {
		return
	}
	key, life := c.ownerNote(tag), c.ownerLife(until.Sub(at))
	c.settle(false, func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.releaseTimeout)
		defer cancel()
		label := c.ownerOf(ctx, all, value, map[string]string{})
		if label == "" {
			return
		}
		c.onEveryNode(ctx, all, func(ctx context.Context, _ int, n adapterInspect) {
			_ = n.PutNote(ctx, key, label, life)
		})
	})
}

// ownerOf returns the owner label of the client that drew value, as the
// nodes keep it, or "" when unknown (an untagged value, no note).
func (c *Client) ownerOf(ctx context.Context, nodes []adapterInspect, value string, cache map[string]string) string {
	tag := tagOf(value)
	if tag == "" {
		return ""
	}
	if o, ok := cache[tag]; ok {
		return o
	}
	key := c.ownerNote(tag)
	found := make([]string, len(nodes))
	c.onEveryNode(ctx, nodes, func(ctx context.Context, i int, n adapterInspect) {
		if v, ok, err := n.Note(ctx, key); err == nil && ok {
			found[i] = strings.ToValidUTF8(v, "?")
		}
	})
	owner := ""
	for _, v := range found {
		if v != "" {
			owner = v
			break
		}
	}
	cache[tag] = owner
	return owner
}
