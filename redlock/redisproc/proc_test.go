package redisproc_test

import (
	"context"
	"os"
	"testing"
	"time"

	"dlm/redlock/redisproc"
)

func requireRedis(t *testing.T) {
	t.Helper()
	if redisproc.Available() {
		return
	}
	if os.Getenv("CI") != "" || os.Getenv("DLM_REQUIRE_REDIS") != "" {
		t.Fatal("redis-server not found on PATH (CI or DLM_REQUIRE_REDIS is set)")
	}
	t.Skip("SKIPPED: redis-server not found on PATH (Debian: apt-get install redis-server)")
}

// A wrapper that runs redis-server as its child: Kill must reach the child
// too and return, even though the child held the output pipe open.
func TestKillReachesAWrappersChild(t *testing.T) {
	requireRedis(t)
	p, err := redisproc.Start(t.Context(), redisproc.Config{Wrapper: []string{"sh", "-c", `"$0" "$@"; :`}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan struct{})
	go func() { p.Kill(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Kill of a wrapped redis-server did not return")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.Client().Ping(ctx).Err(); err == nil {
		t.Fatal("the wrapped redis-server still answers after Kill")
	}
}
