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

// RunNodeConformance runs the node conformance suite against one real
// redis-server: every redlock.Node adapter must pass it (R3, R5, R17), and
// the cases of the capabilities the node has (TransferNode, FencingNode,
// BatchNode; the batch cases start servers of their own).
func RunNodeConformance(t *testing.T, newNode NodeFactory) {
	s := StartServer(t)
	n := newNode(t, s)
	ctx := t.Context()
	const ttl = 5 * time.Second
	pttl := func(key string) time.Duration {
		t.Helper()
		d, err := s.Client().PTTL(ctx, key).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", key, err)
		}
		return d
	}
	get := func(key string) string {
		t.Helper()
		v, _ := s.Client().Get(ctx, key).Result()
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
		if n, _ := s.Client().Exists(ctx, "c:missing").Result(); n != 0 {
			t.Fatal("Extend created a key")
		}
	})
	t.Run("ScriptsSurviveScriptFlush", func(t *testing.T) { // NOSCRIPT fallback
		_, _ = n.Acquire(ctx, "c:f", "mine", ttl)
		if err := s.Client().ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		ok, err := n.Extend(ctx, "c:f", "mine", ttl)
		mustOK("Extend after SCRIPT FLUSH", ok, err, true)
		ok, err = n.Release(ctx, "c:f", "mine")
		mustOK("Release after SCRIPT FLUSH", ok, err, true)
	})
	if tn, ok := n.(adapter.TransferNode); ok {
		t.Run("TransferOnlyFromOwnValueOrFree", func(t *testing.T) { // R3, R5
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
			ok, err = tn.Transfer(ctx, "c:t-free", "gone", "d", ttl)
			mustOK("Transfer of a free key", ok, err, true)
			if got := get("c:t-free"); got != "d" {
				t.Fatalf("a free key after Transfer holds %q, want d", got)
			}
		})
	}
	if fn, ok := n.(adapter.FencingNode); ok {
		t.Run("Fencing", func(t *testing.T) { runFencingConformance(t, s, fn) })
	}
	if _, ok := n.(adapter.BatchNode); ok {
		t.Run("Batch", func(t *testing.T) { runBatchConformance(t, newNode) })
	}
	t.Run("DeadlineIsHonoured", func(t *testing.T) { // R8.2
		s2 := StartServer(t)
		n2 := newNode(t, s2)
		_, _ = n2.Acquire(ctx, "warm", "x", ttl)
		s2.Freeze()
		defer s2.Thaw()
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
func runFencingConformance(t *testing.T, s *Server, n adapter.FencingNode) {
	ctx := t.Context()
	const ttl = 5 * time.Second
	get := func(key string) string {
		t.Helper()
		v, _ := s.Client().Get(ctx, key).Result()
		return v
	}
	check := func(name string, gotOK bool, err error, wantOK bool) {
		t.Helper()
		if err != nil || gotOK != wantOK {
			t.Fatalf("%s = %v, %v; want %v, nil", name, gotOK, err, wantOK)
		}
	}
	ok, f, err := n.AcquireFenced(ctx, "f:l", "f:fence", "mine", ttl)
	check("AcquireFenced of a free key", ok, err, true)
	if f != 0 {
		t.Fatalf("fence of a new resource = %d, want 0", f)
	}
	if d, _ := s.Client().PTTL(ctx, "f:l").Result(); d <= 0 || d > ttl {
		t.Fatalf("PTTL after AcquireFenced = %v, want in (0, %v]", d, ttl)
	}
	ok, _, err = n.AcquireFenced(ctx, "f:l", "f:fence", "other", ttl)
	check("AcquireFenced of a held key", ok, err, false)
	ok, err = n.RaiseFence(ctx, "f:l", "f:fence", "other", 9, 0)
	check("RaiseFence by a non-holder", ok, err, false)
	if v := get("f:fence"); v != "" {
		t.Fatalf("fence after a non-holder's raise = %q, want none", v)
	}
	ok, err = n.RaiseFence(ctx, "f:l", "f:fence", "mine", 5, 0)
	check("RaiseFence by the holder", ok, err, true)
	ok, err = n.RaiseFence(ctx, "f:l", "f:fence", "mine", 3, 0)
	check("RaiseFence to a lower token", ok, err, false)
	ok, err = n.RaiseFence(ctx, "f:l", "f:fence", "mine", 5, 0)
	check("RaiseFence to an equal token", ok, err, false)
	if v := get("f:fence"); v != "5" {
		t.Fatalf("fence = %q, want 5 (never lowered)", v)
	}
	if _, err := n.Release(ctx, "f:l", "mine"); err != nil {
		t.Fatal(err)
	}
	ok, f, err = n.AcquireFenced(ctx, "f:l", "f:fence", "next", ttl)
	check("AcquireFenced after the release", ok, err, true)
	if f != 5 {
		t.Fatalf("fence read by the next holder = %d, want 5", f)
	}
	const big, bigger = 9_999_999_999_999_999_999, 18_446_744_073_709_551_615
	ok, err = n.RaiseFence(ctx, "f:l", "f:fence", "next", big, time.Hour)
	check("RaiseFence to a 19-digit token", ok, err, true)
	if d, _ := s.Client().PTTL(ctx, "f:fence").Result(); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("fence PTTL with retention 1h = %v", d)
	}
	ok, err = n.RaiseFence(ctx, "f:l", "f:fence", "next", big-1, 0)
	check("RaiseFence below a 19-digit fence (beyond 2^53)", ok, err, false)
	ok, err = n.RaiseFence(ctx, "f:l", "f:fence", "next", bigger, 0)
	check("RaiseFence to 2^64-1 without retention", ok, err, true)
	if v := get("f:fence"); v != "18446744073709551615" {
		t.Fatalf("fence = %q, want 18446744073709551615", v)
	}
	if d, _ := s.Client().PTTL(ctx, "f:fence").Result(); d != -1 {
		t.Fatalf("fence PTTL without retention = %v, want none (-1)", d)
	}
	if err := s.Client().Set(ctx, "f:bad", "not a number", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.AcquireFenced(ctx, "f:l2", "f:bad", "v", ttl); err == nil {
		t.Fatal("AcquireFenced over a corrupt fence value: no error")
	}
}
