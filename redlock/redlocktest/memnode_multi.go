package redlocktest

import (
	"context"
	"strconv"
	"strings"
	"time"

	"dlm/redlock/adapter"
)

var (
	_ adapter.MultiNode = (*MemNode)(nil)
)

// The fenced operations on a set, on the wire only (Request.Keys holds the
// lock keys, then their fence keys), and the restore of a set.
const (
	opAcquireAllFenced adapter.Op = 216 + iota
	opRaiseFences
	opRestoreAll // MultiNode.RestoreAll, a blocking method only
)

// AcquireAll sets every key to value with an expiry of ttl only if each is
// free (none exists, or it holds only waiting writers' marks), in one step
// (adapter.MultiNode, R3 for a set).
func (n *MemNode) AcquireAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpAcquireAll, Keys: keys, Value: value, TTL: ttl})
}

// ReleaseAll deletes every key that holds value, announcing each deletion
// to the watchers of the key when announce is set (adapter.MultiNode). It
// reports whether every key held value.
func (n *MemNode) ReleaseAll(ctx context.Context, keys []string, value string, announce bool) (bool, error) {
	op := adapter.OpReleaseAll
	if announce {
		op = adapter.OpReleaseAllAnnounce
	}
	return n.ask(ctx, adapter.Request{Op: op, Keys: keys, Value: value})
}

// ExtendAll resets every key's expiry to ttl only if every key holds value
// (adapter.MultiNode, R17 for a set).
func (n *MemNode) ExtendAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpExtendAll, Keys: keys, Value: value, TTL: ttl})
}

// RestoreAll sets every key to value with an expiry of ttl only if each is
// missing or holds value already, in one step (adapter.MultiNode: an
// extension's restore of a set that the node forgot in part).
func (n *MemNode) RestoreAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: opRestoreAll, Keys: keys, Value: value, TTL: ttl})
}

// AcquireAllFenced is AcquireAll that also reads the largest fence under
// fenceKeys when it set the keys (adapter.MultiNode, R18).
func (n *MemNode) AcquireAllFenced(ctx context.Context, keys, fenceKeys []string, value string, ttl time.Duration) (bool, uint64, error) {
	r := n.call(&memCall{ctx: ctx, req: adapter.Request{Op: opAcquireAllFenced, Keys: joinKeys(keys, fenceKeys), Value: value, TTL: ttl}})
	return r.ok, r.fence, r.err
}

// RaiseFences sets every fence under fenceKeys to token, with an expiry of
// retention (0: none), only if every key holds value and every fence is
// below token (adapter.MultiNode, R18).
func (n *MemNode) RaiseFences(ctx context.Context, keys, fenceKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	r := n.call(&memCall{ctx: ctx, token: token, retention: retention,
		req: adapter.Request{Op: opRaiseFences, Keys: joinKeys(keys, fenceKeys), Value: value}})
	return r.ok, r.err
}

func joinKeys(keys, fenceKeys []string) []string {
	return append(append(make([]string, 0, len(keys)+len(fenceKeys)), keys...), fenceKeys...)
}

// applyMulti runs c when it is an operation on a set, with the semantics
// of the scripts (redlock/scripts/*_all*.lua, raise_fences.lua) and the
// node's lies; it reports false for any other operation. Called with n.mu
// held.
func (n *MemNode) applyMulti(c *memCall, now time.Time) (memResult, bool) {
	r := c.req
	lieAcq, lieAll := n.lie >= LieAcquired, n.lie == LieAll
	holdsAll := func(keys []string) bool {
		for _, k := range keys {
			if e, ok := n.live(k, now); !ok || e.value != r.Value {
				return false
			}
		}
		return true
	}
	acquire := func(keys []string) bool {
		if lieAcq {
			return true
		}
		for _, k := range keys {
			if !n.freeForSet(k, now) {
				return false
			}
		}
		for _, k := range keys {
			n.keys[k] = memEntry{value: r.Value, expires: now.Add(r.TTL)}
		}
		return true
	}
	switch r.Op {
	case adapter.OpAcquireAll:
		return memResult{ok: acquire(r.Keys)}, true
	case opAcquireAllFenced:
		keys, fences := r.Keys[:len(r.Keys)/2], r.Keys[len(r.Keys)/2:]
		if !acquire(keys) {
			return memResult{}, true
		}
		var best uint64
		for _, fk := range fences {
			f, err := n.fenceLocked(fk, now)
			if err != nil {
				return memResult{ok: true, err: err}, true
			}
			best = max(best, f)
		}
		return memResult{ok: true, fence: best}, true
	case adapter.OpReleaseAll, adapter.OpReleaseAllAnnounce:
		all := true
		var ann []func()
		for _, k := range r.Keys {
			if e, ok := n.live(k, now); !ok || e.value != r.Value {
				all = false
				continue
			}
			delete(n.keys, k)
			if r.Op != adapter.OpReleaseAllAnnounce {
				continue
			}
			for w := range n.watches {
				if w.watching(k) {
					key, value := k, r.Value
					ann = append(ann, func() { w.notify(key, value) })
				}
			}
		}
		return memResult{ok: all, announce: ann}, true
	case opRestoreAll:
		if lieAcq {
			return memResult{ok: true}, true
		}
		for _, k := range r.Keys {
			if e, held := n.live(k, now); held && e.value != r.Value {
				return memResult{}, true
			}
		}
		for _, k := range r.Keys {
			n.keys[k] = memEntry{value: r.Value, expires: now.Add(r.TTL)}
		}
		return memResult{ok: true}, true
	case adapter.OpExtendAll:
		if lieAll {
			return memResult{ok: true}, true
		}
		if !holdsAll(r.Keys) {
			return memResult{}, true
		}
		for _, k := range r.Keys {
			n.keys[k] = memEntry{value: r.Value, expires: now.Add(r.TTL)}
		}
		return memResult{ok: true}, true
	case opRaiseFences:
		if lieAll {
			return memResult{ok: true}, true
		}
		keys, fences := r.Keys[:len(r.Keys)/2], r.Keys[len(r.Keys)/2:]
		if !holdsAll(keys) {
			return memResult{}, true
		}
		for _, fk := range fences {
			cur, err := n.fenceLocked(fk, now)
			if err != nil {
				return memResult{err: err}, true
			}
			if cur >= c.token {
				return memResult{}, true
			}
		}
		var exp time.Time
		if c.retention > 0 {
			exp = now.Add(c.retention)
		}
		for _, fk := range fences {
			n.keys[fk] = memEntry{value: strconv.FormatUint(c.token, 10), expires: exp}
		}
		return memResult{ok: true}, true
	}
	return memResult{}, false
}

// freeForSet reports whether key is free for a set's acquisition, as
// set_free.lua decides: absent, or a readers' hash with no live reader
// (only waiting writers' marks). Called with n.mu held.
func (n *MemNode) freeForSet(key string, now time.Time) bool {
	e, ok := n.live(key, now)
	if !ok {
		return true
	}
	if e.hash == nil {
		return false
	}
	for f, exp := range e.hash {
		if exp.After(now) && !strings.HasPrefix(f, "w:") {
			return false
		}
	}
	return true
}
