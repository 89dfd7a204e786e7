package redlock

import (
	"slices"
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// Each kind of acquisition asks each node for what its shape says (R3),
// in its fenced form on a client with fencing (R18), with the node call
// that carries the fenced forms, and a failed attempt undoes it with the
// matching release (R8.5).
func TestShapesAskEachNode(t *testing.T) {
	nodes := []Node{newMemFenceNode(false), newMemFenceNode(false), newMemFenceNode(false)}
	plain, err := New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	fenced, err := New(nodes, WithFencing())
	if err != nil {
		t.Fatal(err)
	}
	defer fenced.Close()
	o := lockOptions{ttl: 7 * time.Second}
	const value = "v"
	tests := []struct {
		name      string
		c         *Client
		target    func(c *Client) target
		op, undo  adapter.Op
		key       string
		keys      []string
		waiter    string
		fenceKey  string   // of the node call; "" and no fenceKeys: no node call
		fenceKeys []string // a set's
		async     bool     // AsyncNode.Start may carry it
	}{
		{name: "exclusive", c: plain, target: func(c *Client) target { return c.one("r") },
			op: adapter.OpAcquire, undo: adapter.OpRelease, key: "dlm:lock:r", async: true},
		{name: "exclusive fenced", c: fenced, target: func(c *Client) target { return c.one("r") },
			op: opAcquireFenced, undo: adapter.OpRelease, key: "dlm:lock:r", fenceKey: "dlm:fence:r"},
		{name: "set", c: plain, target: func(c *Client) target { return c.set([]string{"a", "b"}) },
			op: adapter.OpAcquireAll, undo: adapter.OpReleaseAll, keys: []string{"dlm:lock:a", "dlm:lock:b"}, async: true},
		{name: "set fenced", c: fenced, target: func(c *Client) target { return c.set([]string{"a", "b"}) },
			op: opAcquireAllFenced, undo: adapter.OpReleaseAll, keys: []string{"dlm:lock:a", "dlm:lock:b"}, fenceKeys: []string{"dlm:fence:a", "dlm:fence:b"}},
		{name: "reader", c: plain, target: func(c *Client) target { t := c.one("r"); t.shape = readShape{}; return t },
			op: adapter.OpRAcquire, undo: adapter.OpRRelease, key: "dlm:lock:r"},
		{name: "reader on a fenced client", c: fenced, target: func(c *Client) target { t := c.one("r"); t.shape = readShape{}; return t },
			op: adapter.OpRAcquire, undo: adapter.OpRRelease, key: "dlm:lock:r"},
		{name: "writer", c: plain, target: func(c *Client) target { t := c.one("r"); t.shape, t.waiter = writeShape{}, "w"; return t },
			op: adapter.OpWAcquire, undo: adapter.OpRelease, key: "dlm:lock:r", waiter: "w"},
		{name: "writer fenced", c: fenced, target: func(c *Client) target { t := c.one("r"); t.shape, t.waiter = writeShape{}, "w"; return t },
			op: opWAcquireFenced, undo: adapter.OpRelease, key: "dlm:lock:r", waiter: "w", fenceKey: "dlm:fence:r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := tt.target(tt.c)
			req, by := tg.shape.ask(tt.c, tg, value, o)
			want := adapter.Request{Op: tt.op, Key: tt.key, Keys: tt.keys, Value: value, Waiter: tt.waiter, TTL: o.ttl}
			if req.Op != want.Op || req.Key != want.Key || !slices.Equal(req.Keys, want.Keys) || req.Value != want.Value || req.Waiter != want.Waiter || req.TTL != want.TTL {
				t.Errorf("request %+v, want %+v", req, want)
			}
			if got := undo(req); got.Op != tt.undo || got.Key != req.Key || !slices.Equal(got.Keys, req.Keys) || got.Value != value {
				t.Errorf("undo %+v, want %v of the same key(s) and value", got, tt.undo)
			}
			if got := by == nil && startable(req.Op); got != tt.async {
				t.Errorf("carried by AsyncNode.Start: %v, want %v", got, tt.async)
			}
			if tt.fenceKey == "" && tt.fenceKeys == nil {
				if by != nil {
					t.Errorf("node call %T, want none", by)
				}
				return
			}
			fa, ok := by.(*fenceAcquire)
			if !ok {
				t.Fatalf("node call %T, want *fenceAcquire", by)
			}
			if fa.key != tt.fenceKey || !slices.Equal(fa.keys, tt.fenceKeys) || len(fa.fences) != len(nodes) || len(fa.lost) != len(nodes) {
				t.Errorf("fence key %q, keys %q, %d fences, %d lost; want %q, %q, %d each", fa.key, fa.keys, len(fa.fences), len(fa.lost), tt.fenceKey, tt.fenceKeys, len(nodes))
			}
			if _, ok := by.(confirmer); !ok {
				t.Errorf("%T confirms no grant: fencing's phase 2 would not run", by)
			}
		})
	}
}
