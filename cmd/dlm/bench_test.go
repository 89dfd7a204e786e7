package main

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/redlocktest"
)

// TestBench runs a short dlm bench against real nodes and checks that it
// reports every workload and leaves no lock behind. The node timeout is
// generous: this checks behaviour on a loaded machine, not speed.
func TestBench(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 5)
	nodes := strings.Join(c.URLs(), ",")
	r := runDLM(t, 60*time.Second, nil, "bench", "--nodes", nodes, "--node-timeout", "2s",
		"--duration", "200ms", "--goroutines", "1,4", "--seq", "200ms",
		"--workers", "4", "--contention", "300ms")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0; stderr: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"5 nodes (quorum 3), rueidis adapter",
		"Throughput, distinct resources",
		"Sequential, one goroutine",
		"acquire+release p50",
		"Contention, 4 workers on one resource, 1ms hold",
		"critical sections/s",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool { return len(keysOn(c)) == 0 },
		"dlm bench left locks behind: %v", keysOn(c))
}

func TestBenchRefusesBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"no nodes", []string{"bench"}, nil, "no nodes"},
		{"bad goroutines", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--goroutines", "4,x"}, nil, `"x" is not a positive number`},
		{"zero duration", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--duration", "0s"}, nil, "--duration must be positive"},
		{"node timeout over ttl", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--node-timeout", "20s"}, nil, "--node-timeout must be positive"},
		{"bad adapter", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--adapter", "x"}, nil, "unknown adapter"},
		{"hold over ttl", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--hold", "20s"}, nil, "must be well under --ttl"},
		{"unknown hold mode", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--hold-mode", "spin"}, nil, "--hold-mode: unknown mode \"spin\""},
		{"bad url", nil, []string{nodesEnv + "=http://x"}, "unknown scheme"},
		{"too many goroutines", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--goroutines", "1,10000000"}, nil, "--goroutines: 10000000 is over the limit of 10000"},
		{"too many workers", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--workers", "1000000"}, nil, "--workers: 1000000 is over the limit of 10000"},
		{"too long", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--duration", "100h"}, nil, "--duration: 100h0m0s is over the limit of 1h0m0s"},
		{"ttl too long", []string{"bench", "--nodes", "redis://127.0.0.1:1", "--ttl", "2562047h"}, nil, "--ttl: 2562047h0m0s is over the limit of 24h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args == nil {
				args = []string{"bench"}
			}
			r := runDLM(t, 30*time.Second, tt.env, args...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr lacks %q: %s", tt.want, r.stderr)
			}
		})
	}
}

func TestBenchUnreachableNodes(t *testing.T) {
	t.Parallel()
	s := redlocktest.StartServer(t)
	s.Kill()
	r := runDLM(t, 30*time.Second, nil, "bench", "--nodes", s.URL(), "-q")
	if r.code != exitUnavailable {
		t.Errorf("exit %d, want %d; stderr: %s", r.code, exitUnavailable, r.stderr)
	}
	if !strings.Contains(r.stderr, "cannot lock on the nodes") {
		t.Errorf("stderr does not say why: %s", r.stderr)
	}
}
