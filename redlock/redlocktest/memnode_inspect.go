package redlocktest

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"dlm/redlock/adapter"
)

var _ adapter.InspectNode = (*MemNode)(nil)

// Inspect reads key as InspectNode says, through the node's wire and
// faults (adapter.InspectNode).
func (n *MemNode) Inspect(ctx context.Context, key string) (adapter.KeyState, error) {
	c := &memCall{ctx: ctx}
	c.fn = func(now time.Time) memResult {
		e, ok := n.live(key, now)
		var st adapter.KeyState
		switch {
		case !ok:
			return memResult{state: st}
		case e.expires.IsZero():
			st.TTL = NoExpiry
		default:
			st.TTL = e.expires.Sub(now)
		}
		if e.hash == nil {
			st.Kind, st.Value = adapter.KeyLock, e.value
			return memResult{state: st}
		}
		st.Kind = adapter.KeyReaders
		for f, exp := range e.hash {
			switch {
			case !exp.After(now):
			case strings.HasPrefix(f, "w:"):
				st.Waiters++
			default:
				st.Readers = append(st.Readers, adapter.Reader{Value: strings.TrimPrefix(f, "r:"), TTL: exp.Sub(now)})
			}
		}
		sort.Slice(st.Readers, func(i, j int) bool { return st.Readers[i].Value < st.Readers[j].Value })
		return memResult{state: st}
	}
	r := n.call(c)
	return r.state, r.err
}

// Scan returns the live keys that start with prefix, count at a time, in
// order: the cursor is the position of the next key (adapter.InspectNode).
func (n *MemNode) Scan(ctx context.Context, prefix, cursor string, count int) ([]string, string, error) {
	from := 0
	if cursor != "" {
		v, err := strconv.Atoi(cursor)
		if err != nil || v < 0 {
			return nil, "", &cursorError{cursor}
		}
		from = v
	}
	count = max(count, 1)
	c := &memCall{ctx: ctx}
	c.fn = func(now time.Time) memResult {
		var all []string
		for k := range n.keys {
			if _, ok := n.live(k, now); ok && strings.HasPrefix(k, prefix) {
				all = append(all, k)
			}
		}
		sort.Strings(all)
		return memResult{keys: all}
	}
	r := n.call(c)
	if r.err != nil {
		return nil, "", r.err
	}
	if from >= len(r.keys) {
		return nil, "", nil
	}
	end := min(from+count, len(r.keys))
	next := ""
	if end < len(r.keys) {
		next = strconv.Itoa(end)
	}
	return r.keys[from:end], next, nil
}

// cursorError is a Scan cursor that no Scan returned.
type cursorError struct{ cursor string }

func (e *cursorError) Error() string {
	return "redlocktest: bad scan cursor " + strconv.Quote(e.cursor)
}

// PutNote sets key to note with an expiry of ttl (adapter.InspectNode).
func (n *MemNode) PutNote(ctx context.Context, key, note string, ttl time.Duration) error {
	c := &memCall{ctx: ctx}
	c.fn = func(now time.Time) memResult {
		var exp time.Time
		if ttl > 0 {
			exp = now.Add(ttl)
		}
		n.keys[key] = memEntry{value: note, expires: exp}
		return memResult{ok: true}
	}
	return n.call(c).err
}

// Note returns the string under key (adapter.InspectNode).
func (n *MemNode) Note(ctx context.Context, key string) (string, bool, error) {
	c := &memCall{ctx: ctx}
	c.fn = func(now time.Time) memResult {
		e, ok := n.live(key, now)
		if !ok || e.hash != nil {
			return memResult{}
		}
		return memResult{ok: true, record: e.value}
	}
	r := n.call(c)
	return r.record, r.ok, r.err
}
