package redlocktest_test

import (
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

func TestServerFaults(t *testing.T) {
	s := redlocktest.StartServer(t, redlocktest.WithPersistence())
	ctx := t.Context()
	if err := s.Client().Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	s.Freeze()
	if !s.Frozen() || !s.Running() {
		t.Fatal("Freeze: want frozen and running")
	}
	s.Thaw()
	s.Kill()
	if s.Running() {
		t.Fatal("Kill: still running")
	}
	s.Restart(0)
	// appendfsync always: the acknowledged key survived the crash (R16.2).
	if got := s.MustKeys("k"); len(got) != 1 {
		t.Fatalf("keys after a crash with persistence = %v, want [k]", got)
	}
	s.Stop()
	if s.Running() {
		t.Fatal("Stop: still running")
	}
}

func TestRestartWithoutPersistenceForgets(t *testing.T) { // R16.1
	s := redlocktest.StartServer(t)
	if err := s.Client().Set(t.Context(), "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	s.Restart(0)
	if s.Port() != port {
		t.Fatalf("restarted on port %d, want %d", s.Port(), port)
	}
	if got := s.MustKeys("k"); len(got) != 0 {
		t.Fatalf("keys after a crash without persistence = %v, want none", got)
	}
}
