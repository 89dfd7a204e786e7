package redlocktest

import (
	"context"
	"strings"
	"time"

	"dlm/redlock/adapter"
)

// The read-write locks of a MemNode (adapter.RWNode), with the semantics of
// redlock/scripts/rw.lua: readers share the lock key as a hash of fields
// "r:"+value to expiries on the node's clock, a writer holds it as a plain
// string, and a waiting writer's mark "w:"+waiter keeps new readers out.

// RAcquire adds a reader of key with value and an expiry of ttl when key is
// absent or held by readers and no writer waits (adapter.RWNode).
func (n *MemNode) RAcquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpRAcquire, Key: key, Value: value, TTL: ttl})
}

// RRelease removes the reader of key with value (adapter.RWNode).
func (n *MemNode) RRelease(ctx context.Context, key, value string) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpRRelease, Key: key, Value: value})
}

// RExtend resets the expiry of the reader of key with value to ttl when it
// still holds key (adapter.RWNode).
func (n *MemNode) RExtend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpRExtend, Key: key, Value: value, TTL: ttl})
}

// WAcquire sets key to value with an expiry of ttl when key is absent or
// held by no live reader; otherwise, when readers hold it and waiter is not
// empty, it leaves or refreshes waiter's mark (adapter.RWNode).
func (n *MemNode) WAcquire(ctx context.Context, key, value, waiter string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpWAcquire, Key: key, Value: value, TTL: ttl, Waiter: waiter})
}

// WUnwait removes waiter's mark from key (adapter.RWNode).
func (n *MemNode) WUnwait(ctx context.Context, key, waiter string) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpWUnwait, Key: key, Waiter: waiter})
}

// WMark leaves or refreshes waiter's mark where live readers hold key,
// without acquiring (adapter.RWNode).
func (n *MemNode) WMark(ctx context.Context, key, waiter string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpWMark, Key: key, Waiter: waiter, TTL: ttl})
}

// opWAcquireFenced is WAcquireFenced on the wire (beyond adapter.Op's).
const opWAcquireFenced adapter.Op = 232

// WAcquireFenced is WAcquire that, when it set key, also reads the fence
// under fenceKey (adapter.RWNode, R18 phase 1). A fence that is not a
// decimal uint64 is an error, the key being set all the same.
func (n *MemNode) WAcquireFenced(ctx context.Context, key, fenceKey, value, waiter string, ttl time.Duration) (bool, uint64, error) {
	r := n.call(&memCall{ctx: ctx, fenceKey: fenceKey,
		req: adapter.Request{Op: opWAcquireFenced, Key: key, Value: value, TTL: ttl, Waiter: waiter}})
	return r.ok, r.fence, r.err
}

// Readers returns the values of the live readers of key and the waiters
// whose marks are alive, on the node's clock (for tests), without going
// through the wire or the faults.
func (n *MemNode) Readers(key string) (readers, waiters []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.nowLocked(n.base())
	e, ok := n.live(key, now)
	if !ok || e.hash == nil {
		return nil, nil
	}
	for f, exp := range e.hash {
		if !exp.After(now) {
			continue
		}
		if w, ok := strings.CutPrefix(f, "w:"); ok {
			waiters = append(waiters, w)
		} else {
			readers = append(readers, strings.TrimPrefix(f, "r:"))
		}
	}
	return readers, waiters
}

// applyRW runs one of RWNode's operations on the keyspace, as rw.lua does;
// called with n.mu held.
func (n *MemNode) applyRW(c *memCall, now time.Time, lieAcq, lieAll bool) memResult {
	r := c.req
	e, exists := n.live(r.Key, now)
	isHash := exists && e.hash != nil
	switch r.Op {
	case adapter.OpRAcquire, adapter.OpRExtend:
		if r.Op == adapter.OpRAcquire && lieAcq || r.Op == adapter.OpRExtend && lieAll {
			return memResult{ok: true}
		}
		f, until := "r:"+r.Value, now.Add(r.TTL)
		if !exists && r.Op == adapter.OpRAcquire {
			n.keys[r.Key] = memEntry{expires: until, hash: map[string]time.Time{f: until}}
			return memResult{ok: true}
		}
		if !isHash {
			return memResult{}
		}
		latest, _, waiting := pruneHash(e.hash, now)
		if r.Op == adapter.OpRAcquire && waiting {
			n.setHash(r.Key, e.hash, latest, now)
			return memResult{}
		}
		if cur, ok := e.hash[f]; r.Op == adapter.OpRExtend && (!ok || !cur.After(now)) {
			n.setHash(r.Key, e.hash, latest, now)
			return memResult{}
		}
		e.hash[f] = until
		n.setHash(r.Key, e.hash, laterOf(latest, until), now)
		return memResult{ok: true}
	case adapter.OpRRelease, adapter.OpWUnwait:
		if !isHash {
			return memResult{}
		}
		f := "r:" + r.Value
		if r.Op == adapter.OpWUnwait {
			f = "w:" + r.Waiter
		}
		cur, ok := e.hash[f]
		if !ok {
			return memResult{}
		}
		delete(e.hash, f)
		latest, _, _ := pruneHash(e.hash, now)
		n.setHash(r.Key, e.hash, latest, now)
		return memResult{ok: cur.After(now)}
	case adapter.OpWMark:
		if !isHash {
			return memResult{}
		}
		latest, readers, _ := pruneHash(e.hash, now)
		if readers == 0 {
			n.setHash(r.Key, e.hash, latest, now)
			return memResult{}
		}
		until := now.Add(r.TTL)
		e.hash["w:"+r.Waiter] = until
		n.setHash(r.Key, e.hash, laterOf(latest, until), now)
		return memResult{ok: true}
	case adapter.OpWAcquire, opWAcquireFenced:
		if lieAcq {
			return n.fenced(c, now)
		}
		if isHash {
			latest, readers, _ := pruneHash(e.hash, now)
			switch {
			case readers == 0:
				delete(n.keys, r.Key) // only marks: the writer goes first
				exists = false
			case r.Waiter != "":
				until := now.Add(r.TTL)
				e.hash["w:"+r.Waiter] = until
				n.setHash(r.Key, e.hash, laterOf(latest, until), now)
			default:
				n.setHash(r.Key, e.hash, latest, now)
			}
		}
		if exists {
			return memResult{}
		}
		n.keys[r.Key] = memEntry{value: r.Value, expires: now.Add(r.TTL)}
		return n.fenced(c, now)
	}
	return memResult{}
}

// fenced is the answer of a writer's acquisition that set its key: with
// the fence under c.fenceKey when it is fenced (opWAcquireFenced).
func (n *MemNode) fenced(c *memCall, now time.Time) memResult {
	if c.req.Op != opWAcquireFenced {
		return memResult{ok: true}
	}
	f, err := n.fenceLocked(c.fenceKey, now)
	return memResult{ok: true, fence: f, err: err}
}

// pruneHash deletes the fields of h whose expiry passed and returns the
// latest expiry left, the live readers, and whether a writer waits.
func pruneHash(h map[string]time.Time, now time.Time) (latest time.Time, readers int, waiting bool) {
	for f, exp := range h {
		switch {
		case !exp.After(now):
			delete(h, f)
		case strings.HasPrefix(f, "w:"):
			waiting = true
		default:
			readers++
		}
		if exp.After(latest) && exp.After(now) {
			latest = exp
		}
	}
	return latest, readers, waiting
}

// setHash stores h under key with the expiry latest, or deletes key when
// latest has passed (an empty hash); called with n.mu held.
func (n *MemNode) setHash(key string, h map[string]time.Time, latest, now time.Time) {
	if !latest.After(now) {
		delete(n.keys, key)
		return
	}
	n.keys[key] = memEntry{expires: latest, hash: h}
}

// laterOf returns the later of a and b.
func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
