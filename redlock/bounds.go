package redlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"dlm/redlock/adapter"
)

// The bounds a client keeps whatever a handle says: a
// Handle is data from outside the process, which its holder can edit, so
// that Resume takes from it only what the nodes confirm (the value: R5,
// R17) and bounds the rest with the client's own settings: the ttl by
// WithMaxTTL, the key prefix by WithKeyPrefix (handleTarget), and the
// extension count by a note kept on the nodes beside the lock (extNote),
// which no handle carries.

// DefaultMaxTTL is the default of WithMaxTTL.
const DefaultMaxTTL = 24 * time.Hour

// DefaultInfoPrefix is the default of WithInfoPrefix.
const DefaultInfoPrefix = "dlm:info:"

// WithMaxTTL bounds the ttl of every lock of the client: an acquisition
// (WithTTL), and the resumption of a handle (Resume, whose ttl is the
// handle's unless WithTTL is given), are refused with ErrInvalid past it,
// so that a handle edited to a ttl of years extends nothing. Default
// DefaultMaxTTL (24h).
func WithMaxTTL(d time.Duration) Option {
	return clientOption(func(o *clientOptions) { o.maxTTL = d })
}

// WithInfoPrefix sets the prefix of the keys a client keeps on the nodes
// beside its locks: the owner record of each client (WithOwner) and the
// extension count of each lock that crossed processes (Resume). Neither
// it nor the lock key prefix may be a prefix of the other; when one is (an
// empty lock key prefix, say), the client keeps no such keys: owners show
// as unknown, and Resume refuses handles with ErrInvalid (the same lock
// key split otherwise, as prefix "dlm:" and resource "lock:x", would
// escape the count kept under "dlm:info:"). An empty info prefix keeps no
// such keys either, and Resume then counts extensions from the handle
// alone. Every
// node must be an adapterInspect for them too. Default
// DefaultInfoPrefix ("dlm:info:").
func WithInfoPrefix(p string) Option {
	return clientOption(func(o *clientOptions) { o.infoPrefix = p })
}

// adapterInspect is adapter.InspectNode, the capability of the keys kept
// beside the locks.
type adapterInspect = adapter.InspectNode

// infoNodes returns the nodes as InspectNodes when the client may keep
// its keys beside the locks (WithInfoPrefix), else nil.
func (c *Client) infoNodes() []adapterInspect {
	p, lp := c.opts.infoPrefix, c.opts.prefix
	if p == "" || strings.HasPrefix(p, lp) || strings.HasPrefix(lp, p) {
		return nil
	}
	out := make([]adapterInspect, len(c.nodes))
	for i, n := range c.nodes {
		xn, ok := n.(adapterInspect)
		if !ok {
			return nil
		}
		out[i] = xn
	}
	return out
}

// infoOverlap reports whether the client keeps no keys beside its locks
// only because its info and lock key prefixes overlap (every node is an
// adapterInspect): then Resume could not find the extension count that
// another split of the same lock key kept.
func (c *Client) infoOverlap() bool {
	for _, n := range c.nodes {
		if _, ok := n.(adapterInspect); !ok {
			return false
		}
	}
	p, lp := c.opts.infoPrefix, c.opts.prefix
	return p != "" && (strings.HasPrefix(p, lp) || strings.HasPrefix(lp, p))
}

// onEveryNode runs fn on every node at once, each call bounded by ctx and
// the node timeout's limit, and returns when every call returned.
func (c *Client) onEveryNode(ctx context.Context, nodes []adapterInspect, fn func(ctx context.Context, i int, n adapterInspect)) {
	ctx, cancel := context.WithTimeout(ctx, timeoutLimit(c.opts.nodeTimeout, 0))
	defer cancel()
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(ctx, i, n)
		}()
	}
	wg.Wait()
}

// asker gives one request of an operator's call its context, and the
// function that ends it (onEveryNodePatiently).
type asker = func() (context.Context, context.CancelFunc)

// onEveryNodePatiently is onEveryNode for an operator's calls (Inspect,
// Locks, ForceRelease), whose nodes must all answer, healthy slow ones
// too: it runs fn on every node of nodes (all the client's, in its order)
// at once, and returns when every call returned. fn makes each request
// with a context of its own from ask (and cancels it after), bounded by
// ctx and by operatorWait: a node that answers each request in time
// answers the call, however many requests it makes (a read and the fence
// counter's, a release marker and the delete, the pages of a scan).
func (c *Client) onEveryNodePatiently(ctx context.Context, nodes []adapterInspect, fn func(ask asker, i int, n adapterInspect)) {
	limit := timeoutLimit(c.opts.nodeTimeout, 0)
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait, patient := c.operatorWait(i, limit)
			expired := false
			ask := func() (context.Context, context.CancelFunc) {
				rctx, cancel := context.WithTimeout(ctx, wait)
				return rctx, func() {
					if ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
						expired, wait = true, limit // the rest of the call waits the limit
					}
					cancel()
				}
			}
			fn(ask, i, n)
			if expired && patient {
				// Not even within the patience (frozen, cut off): the
				// operator's calls of the next ttl wait only the limit
				// for it, as the client's fans do (timeout.go: quiet).
				c.slow[i].quiet.Store(int64(time.Since(c.born) + c.opts.lock.ttl))
			}
		}()
	}
	wg.Wait()
}

// operatorWait is how long each request of an operator's call waits for
// node i, and whether that is the patience. Such a request costs no
// validity, and a node that a grant of the client would wait for must not
// be an error to it: an Inspect that saw it as one would show the lock
// free, and a ForceRelease would leave the lock on it. So it waits as a
// grant of the client's ttl does for a slow node, up to ttl/2 - drift
// (timeout.go: patience), or the node timeout's limit if that is longer.
// A node that did not answer a request within the patience (quiet,
// timeout.go) is waited for only the limit for a ttl, unless it answered
// a fan of the client late since (slow): a dead node costs the operator's
// calls one patience per ttl.
func (c *Client) operatorWait(i int, limit time.Duration) (wait time.Duration, patient bool) {
	patience := c.patience(adapter.Request{Op: adapter.OpAcquire, TTL: c.opts.lock.ttl})
	now, s := int64(time.Since(c.born)), &c.slow[i]
	if patience <= limit || s.quiet.Load() > now && s.until.Load() <= now {
		return limit, false
	}
	return patience, true
}

// extNote is the key of the extension count of the lock with value: a
// digest of the value, so that a name on the nodes says nothing of it,
// and only a holder of the value can find it.
func (c *Client) extNote(value string) string {
	sum := sha256.Sum256([]byte(value))
	return c.opts.infoPrefix + "ext:" + hex.EncodeToString(sum[:16])
}

// extState is a lock's extension count as the nodes keep it: how many
// times it was extended, and the least bound a client resumed it with
// (known: a node keeps them); read is how many nodes answered the read,
// with the note or without.
type extState struct {
	count, bound int
	known        bool
	read         int
}

// readExtensions reads the extension note of value on every node and
// returns the largest count and the least bound any node holds: a holder
// cannot lower what a node keeps but by deleting it on the node itself.
// Read from fewer than a quorum of nodes, the count may miss every node
// that keeps it: Resume then refuses the handle rather than trust its
// count.
func (c *Client) readExtensions(ctx context.Context, nodes []adapterInspect, value string) extState {
	key := c.extNote(value)
	var mu sync.Mutex
	var st extState
	// Patiently: a count unread from a healthy slow node would leave the
	// handle's own count, which may have been edited, to be trusted.
	c.onEveryNodePatiently(ctx, nodes, func(ask asker, _ int, n adapterInspect) {
		rctx, cancel := ask()
		note, ok, err := n.Note(rctx, key)
		cancel()
		if err != nil {
			return
		}
		mu.Lock()
		st.read++
		mu.Unlock()
		if !ok {
			return
		}
		cs, bs, _ := strings.Cut(note, " ")
		count, err1 := strconv.Atoi(cs)
		bound, err2 := strconv.Atoi(bs)
		if err1 != nil || err2 != nil || count < 0 || bound < 1 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !st.known || count > st.count {
			st.count = count
		}
		if !st.known || bound < st.bound {
			st.bound = bound
		}
		st.known = true
	})
	return st
}

// noteExtensions keeps the extension count and bound of l on every node,
// for as long as the lock can live (twice its ttl from now): written after
// each extension of a lock that crossed processes (Resume, Handle).
func (c *Client) noteExtensions(ctx context.Context, nodes []adapterInspect, l *Lock, count, bound int) {
	key, note := c.extNote(l.value), strconv.Itoa(count)+" "+strconv.Itoa(bound)
	c.onEveryNodePatiently(ctx, nodes, func(ask asker, _ int, n adapterInspect) {
		rctx, cancel := ask()
		_ = n.PutNote(rctx, key, note, 2*l.ttl)
		cancel()
	})
}
