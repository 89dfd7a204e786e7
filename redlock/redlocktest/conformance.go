package redlocktest

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
)

// NodeFactory returns a redlock.Node talking to server s.
type NodeFactory func(t testing.TB, s *Server) redlock.Node

// RunNodeConformance runs the node conformance suite against one real
// redis-server: every redlock.Node adapter must pass it (R3, R5, R17).
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
