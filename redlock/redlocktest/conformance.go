package redlocktest

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
)

// NodeFactory returns a redlock.Node talking to server s.
type NodeFactory func(t testing.TB, s *Server) redlock.Node

// Backend is one store under the conformance suite: a node that talks to
// it, and the ways to look at it and to stop it that do not go through the
// node. A redis-server with an adapter's node is one (RunNodeConformance);
// a MemNode is one (MemBackend).
type Backend struct {
	// Node is the node under test.
	Node redlock.Node
	// Inspect reads the store behind Node directly.
	Inspect Inspector
	// Freeze and Thaw stop the store and resume it, requests waiting in
	// between (SIGSTOP and SIGCONT for a redis-server).
	Freeze, Thaw func()
	// FlushScripts forgets the node's cached scripts (SCRIPT FLUSH), or is
	// nil for a store without scripts: the case that needs it is skipped.
	FlushScripts func(ctx context.Context) error
}

// BackendFactory returns a new, empty Backend for one test.
type BackendFactory func(t testing.TB) Backend

// RunNodeConformance runs the node conformance suite (RunConformance)
// against real redis-server processes, the node under test made by
// newNode: every redlock.Node adapter must pass it (R3, R5, R17). It
// also checks, on servers stopped before the node's first request, that
// a request whose context ended before its node was reached is never
// written later (adapter.Node).
func RunNodeConformance(t *testing.T, newNode NodeFactory) {
	t.Run("NeverWrittenAfterItsContextEnded", func(t *testing.T) {
		runNeverWrittenLate(t, func(t *testing.T) (adapter.Node, func(), Inspector) {
			s := StartServer(t)
			s.Freeze()
			t.Cleanup(s.Thaw)
			return newNode(t, s), s.Thaw, s.Inspector()
		})
	})
	RunConformance(t, func(t testing.TB) Backend {
		s := StartServer(t)
		return Backend{
			Node:    newNode(t, s),
			Inspect: s.Inspector(),
			Freeze:  s.Freeze,
			Thaw:    s.Thaw,
			FlushScripts: func(ctx context.Context) error {
				return s.Client().ScriptFlush(ctx).Err()
			},
		}
	})
}

// MemBackend returns the BackendFactory of MemNodes made with opts, for
// RunConformance.
func MemBackend(opts ...MemOption) BackendFactory {
	return func(testing.TB) Backend {
		n := NewMemNode("mem", opts...)
		return Backend{Node: n, Inspect: n, Freeze: n.Freeze, Thaw: n.Thaw}
	}
}

// RunConformance runs the node conformance suite over the backends that
// newBackend makes, reading the store through their Inspector: the cases
// of redlock.Node (R3, R5, R17, R8.2) and those of the capabilities the
// node has (TransferNode, FencingNode, FenceFloorNode, HandoffNode, RecordNode, InspectNode, BatchNode). The same case bodies run
// over every adapter on redis-server and over MemNode (style rule 13).
func RunConformance(t *testing.T, newBackend BackendFactory) {
	b := newBackend(t)
	n, in := b.Node, b.Inspect
	ctx := t.Context()
	const ttl = 5 * time.Second
	pttl := func(key string) time.Duration {
		t.Helper()
		d, ok, err := in.TTL(ctx, key)
		if err != nil {
			t.Fatalf("TTL %s: %v", key, err)
		}
		if !ok {
			return -2
		}
		return d
	}
	get := func(key string) string {
		t.Helper()
		v, _, err := in.Value(ctx, key)
		if err != nil {
			t.Fatalf("value of %s: %v", key, err)
		}
		return v
	}
	mustOK := func(name string, ok bool, err error, want bool) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: unexpected error %v", name, err)
		}
		if ok != want {
			t.Fatalf("%s = %v, want %v", name, ok, want)
		}
	}

	t.Run("AcquireSetsNXWithTTL", func(t *testing.T) { // R3
		ok, err := n.Acquire(ctx, "c:a", "v1", ttl)
		mustOK("first Acquire", ok, err, true)
		ok, err = n.Acquire(ctx, "c:a", "v2", ttl)
		mustOK("second Acquire of a held key", ok, err, false)
		if got := get("c:a"); got != "v1" {
			t.Fatalf("value = %q, want v1", got)
		}
		if d := pttl("c:a"); d <= 0 || d > ttl {
			t.Fatalf("PTTL = %v, want in (0, %v]", d, ttl)
		}
	})
	t.Run("ReleaseOnlyOwnValue", func(t *testing.T) { // R5
		_, _ = n.Acquire(ctx, "c:r", "mine", ttl)
		ok, err := n.Release(ctx, "c:r", "other")
		mustOK("Release with another value", ok, err, false)
		if got := get("c:r"); got != "mine" {
			t.Fatalf("key deleted by a foreign release: value %q", got)
		}
		ok, err = n.Release(ctx, "c:r", "mine")
		mustOK("Release with own value", ok, err, true)
		ok, err = n.Release(ctx, "c:r", "mine")
		mustOK("Release of a missing key", ok, err, false)
	})
	t.Run("ExtendOnlyOwnValueNeverCreates", func(t *testing.T) { // R17
		_, _ = n.Acquire(ctx, "c:e", "mine", 200*time.Millisecond)
		ok, err := n.Extend(ctx, "c:e", "other", ttl)
		mustOK("Extend with another value", ok, err, false)
		ok, err = n.Extend(ctx, "c:e", "mine", ttl)
		mustOK("Extend with own value", ok, err, true)
		if d := pttl("c:e"); d < ttl-time.Second {
			t.Fatalf("PTTL after Extend = %v, want about %v", d, ttl)
		}
		ok, err = n.Extend(ctx, "c:missing", "mine", ttl)
		mustOK("Extend of a missing key", ok, err, false)
		if _, exists, _ := in.Value(ctx, "c:missing"); exists {
			t.Fatal("Extend created a key")
		}
	})
	t.Run("ScriptsSurviveScriptFlush", func(t *testing.T) { // NOSCRIPT fallback
		if b.FlushScripts == nil {
			t.Skip("the node runs no scripts")
		}
		_, _ = n.Acquire(ctx, "c:f", "mine", ttl)
		if err := b.FlushScripts(ctx); err != nil {
			t.Fatal(err)
		}
		ok, err := n.Extend(ctx, "c:f", "mine", ttl)
		mustOK("Extend after SCRIPT FLUSH", ok, err, true)
		ok, err = n.Release(ctx, "c:f", "mine")
		mustOK("Release after SCRIPT FLUSH", ok, err, true)
	})
	if tn, ok := n.(adapter.TransferNode); ok {
		t.Run("TransferOnlyFromOwnValue", func(t *testing.T) { // R3, R5
			_, _ = n.Acquire(ctx, "c:t", "a", 200*time.Millisecond)
			ok, err := tn.Transfer(ctx, "c:t", "other", "b", ttl)
			mustOK("Transfer from another value", ok, err, false)
			if got := get("c:t"); got != "a" {
				t.Fatalf("a foreign transfer changed the key: value %q, want a", got)
			}
			ok, err = tn.Transfer(ctx, "c:t", "a", "b", ttl)
			mustOK("Transfer from the held value", ok, err, true)
			if got := get("c:t"); got != "b" {
				t.Fatalf("value after Transfer = %q, want b", got)
			}
			if d := pttl("c:t"); d < ttl-time.Second || d > ttl {
				t.Fatalf("PTTL after Transfer = %v, want the new ttl %v", d, ttl)
			}
			ok, err = tn.Transfer(ctx, "c:t", "a", "c", ttl)
			mustOK("Transfer from a value already handed on", ok, err, false)
			// A key gone (expired, evicted, deleted) is not handed
			// over: the holder's Unlock must learn that it held too little.
			ok, err = tn.Transfer(ctx, "c:t-free", "gone", "d", ttl)
			mustOK("Transfer of a free key", ok, err, false)
			if got := get("c:t-free"); got != "" {
				t.Fatalf("a free key after Transfer holds %q, want none", got)
			}
		})
	}
	if fn, ok := n.(adapter.FencingNode); ok {
		t.Run("Fencing", func(t *testing.T) { runFencingConformance(t, in, fn) })
	}
	if fn, ok := n.(adapter.FenceFloorNode); ok {
		t.Run("FenceFloor", func(t *testing.T) { runFloorConformance(t, fn) }) // conformance_floor.go
	}
	if hn, ok := n.(adapter.HandoffNode); ok {
		t.Run("Handoff", func(t *testing.T) { runHandoffConformance(t, hn) }) // conformance_handoff.go
	}
	if mn, ok := n.(adapter.MultiNode); ok {
		t.Run("Multi", func(t *testing.T) { runMultiConformance(t, b, mn) }) // conformance_multi.go
	}
	if rn, ok := n.(adapter.RWNode); ok {
		t.Run("ReadWrite", func(t *testing.T) { runRWConformance(t, b, rn) }) // conformance_rw.go
	}
	if rn, ok := n.(adapter.RecordNode); ok {
		t.Run("Record", func(t *testing.T) { runRecordConformance(t, in, rn) }) // conformance_record.go
	}
	if xn, ok := n.(adapter.InspectNode); ok {
		t.Run("Inspect", func(t *testing.T) { runInspectConformance(t, in, xn) }) // conformance_inspect.go
	}
	if _, ok := n.(adapter.BatchNode); ok {
		t.Run("Batch", func(t *testing.T) { runBatchConformance(t, newBackend) })
	}
	t.Run("DeadlineIsHonoured", func(t *testing.T) { // R8.2
		b2 := newBackend(t)
		n2 := b2.Node
		_, _ = n2.Acquire(ctx, "warm", "x", ttl)
		b2.Freeze()
		defer b2.Thaw()
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := n2.Acquire(cctx, "c:d", "v", ttl)
		if err == nil {
			t.Fatal("Acquire on a frozen node succeeded")
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("Acquire on a frozen node took %v; the context deadline was 50ms", el)
		}
	})
}

// runFencingConformance checks the FencingNode capability (R18): the
// fenced acquire reads the fence only when it set the key; the raise acts
// only for the holder and only above the fence, compares tokens beyond 2^53
// exactly, and sets the fence key's retention.
func runFencingConformance(t *testing.T, in Inspector, n adapter.FencingNode) {
	ctx := t.Context()
	const ttl = 5 * time.Second
	get := func(key string) string {
		t.Helper()
		v, _, err := in.Value(ctx, key)
		if err != nil {
			t.Fatalf("value of %s: %v", key, err)
		}
		return v
	}
	pttl := func(key string) time.Duration {
		t.Helper()
		d, ok, err := in.TTL(ctx, key)
		if err != nil {
			t.Fatalf("TTL %s: %v", key, err)
		}
		if !ok {
			return -2
		}
		return d
	}
	check := func(name string, gotOK bool, err error, wantOK bool) {
		t.Helper()
		if err != nil || gotOK != wantOK {
			t.Fatalf("%s = %v, %v; want %v, nil", name, gotOK, err, wantOK)
		}
	}
	ok, f, err := n.AcquireFenced(ctx, "{f}:l", "{f}:fence", "mine", ttl)
	check("AcquireFenced of a free key", ok, err, true)
	if f != 0 {
		t.Fatalf("fence of a new resource = %d, want 0", f)
	}
	if d := pttl("{f}:l"); d <= 0 || d > ttl {
		t.Fatalf("PTTL after AcquireFenced = %v, want in (0, %v]", d, ttl)
	}
	ok, _, err = n.AcquireFenced(ctx, "{f}:l", "{f}:fence", "other", ttl)
	check("AcquireFenced of a held key", ok, err, false)
	ok, err = n.RaiseFence(ctx, "{f}:l", "{f}:fence", "other", 9, 0)
	check("RaiseFence by a non-holder", ok, err, false)
	if v := get("{f}:fence"); v != "" {
		t.Fatalf("fence after a non-holder's raise = %q, want none", v)
	}
	ok, err = n.RaiseFence(ctx, "{f}:l", "{f}:fence", "mine", 5, 0)
	check("RaiseFence by the holder", ok, err, true)
	ok, err = n.RaiseFence(ctx, "{f}:l", "{f}:fence", "mine", 3, 0)
	check("RaiseFence to a lower token", ok, err, false)
	ok, err = n.RaiseFence(ctx, "{f}:l", "{f}:fence", "mine", 5, 0)
	check("RaiseFence to an equal token", ok, err, false)
	if v := get("{f}:fence"); v != "5" {
		t.Fatalf("fence = %q, want 5 (never lowered)", v)
	}
	if _, err := n.Release(ctx, "{f}:l", "mine"); err != nil {
		t.Fatal(err)
	}
	ok, f, err = n.AcquireFenced(ctx, "{f}:l", "{f}:fence", "next", ttl)
	check("AcquireFenced after the release", ok, err, true)
	if f != 5 {
		t.Fatalf("fence read by the next holder = %d, want 5", f)
	}
	const big, bigger = 9_999_999_999_999_999_999, 18_446_744_073_709_551_615
	ok, err = n.RaiseFence(ctx, "{f}:l", "{f}:fence", "next", big, time.Hour)
	check("RaiseFence to a 19-digit token", ok, err, true)
	if d := pttl("{f}:fence"); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("fence PTTL with retention 1h = %v", d)
	}
	ok, err = n.RaiseFence(ctx, "{f}:l", "{f}:fence", "next", big-1, 0)
	check("RaiseFence below a 19-digit fence (beyond 2^53)", ok, err, false)
	ok, err = n.RaiseFence(ctx, "{f}:l", "{f}:fence", "next", bigger, 0)
	check("RaiseFence to 2^64-1 without retention", ok, err, true)
	if v := get("{f}:fence"); v != "18446744073709551615" {
		t.Fatalf("fence = %q, want 18446744073709551615", v)
	}
	if d := pttl("{f}:fence"); d != NoExpiry {
		t.Fatalf("fence PTTL without retention = %v, want none (-1)", d)
	}
	if f, err := in.Fence(ctx, "{f}:fence"); err != nil || f != bigger {
		t.Fatalf("Fence = %d, %v; want %d", f, err, uint64(bigger))
	}
	if err := in.Put(ctx, "{f}:bad", "not a number"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.AcquireFenced(ctx, "{f}:l2", "{f}:bad", "v", ttl); err == nil {
		t.Fatal("AcquireFenced over a corrupt fence value: no error")
	}
}
