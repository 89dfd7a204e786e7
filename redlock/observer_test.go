package redlock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"dlm/redlock"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		m := map[string]any{}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLogger(t *testing.T) {
	var buf syncBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	nodes := exampleNodes()
	c, err := redlock.New(nodes, redlock.WithLogger(logger), redlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	l, err := c.TryLock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLock(ctx, "r"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatal(err)
	}
	if err := l.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// A lost auto-extended lock logs a warning.
	la, err := c.TryLock(ctx, "lost", redlock.WithAutoExtend(), redlock.WithExtendInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		_, _ = n.Release(context.Background(), redlock.DefaultKeyPrefix+"lost", la.Value())
	}
	<-la.Done()

	type want struct{ level, msg, attr, value string }
	wants := []want{
		{"DEBUG", "redlock: attempt", "outcome", "acquired"},
		{"DEBUG", "redlock: attempt", "outcome", "contended"},
		{"DEBUG", "redlock: extended", "resource", "r"},
		{"DEBUG", "redlock: lock ended", "resource", "r"},
		{"WARN", "redlock: extension failed", "resource", "lost"},
		{"WARN", "redlock: lock ended", "resource", "lost"},
	}
	recs := buf.records(t)
	for _, w := range wants {
		found := false
		for _, r := range recs {
			if r["level"] == w.level && r["msg"] == w.msg && r[w.attr] == w.value {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no %s record %q with %s=%s in:\n%v", w.level, w.msg, w.attr, w.value, recs)
		}
	}
	// Per-node outcomes are attributes, by node name.
	for _, r := range recs {
		if r["msg"] == "redlock: attempt" && r["outcome"] == "acquired" {
			if ns, ok := r["nodes"].(map[string]any); !ok || len(ns) == 0 {
				t.Errorf("attempt record without per-node outcomes: %v", r)
			}
			break
		}
	}
}

func TestNilLoggerIsSilent(t *testing.T) {
	c, err := redlock.New(exampleNodes(), redlock.WithLogger(nil), redlock.WithObserver(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.TryLock(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Unlock(t.Context())
}
