package tcp

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"dlm/byzantine"
	"dlm/byzantine/conformance"
)

// childEnv makes a re-executed test binary serve one general instead of
// running tests, so tests get one OS process per general.
const childEnv = "DLM_BYZANTINE_TCP_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		serve := Serve
		if mode == "garbage" {
			serve = serveGarbage
		}
		if err := serve(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "general:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// processSpawner starts every general as a copy of the test binary; the
// generals listed in garbage send malformed frames instead.
func processSpawner(t *testing.T, garbage ...byzantine.ID) Spawner {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return CommandSpawner(func(ctx context.Context, id byzantine.ID) *exec.Cmd {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		mode := "1"
		if slices.Contains(garbage, id) {
			mode = "garbage"
		}
		cmd.Env = append(os.Environ(), childEnv+"="+mode)
		cmd.Stderr = os.Stderr
		return cmd
	})
}

// localSpawnerWith runs general id as serve and the others as Serve, each
// in a goroutine (LocalSpawner).
func localSpawnerWith(id byzantine.ID, serve func(ctx context.Context, in io.Reader, out io.Writer) error) Spawner {
	local := LocalSpawner()
	return func(ctx context.Context, i byzantine.ID) (*Child, error) {
		if i != id {
			return local(ctx, i)
		}
		return inGoroutine(ctx, serve), nil
	}
}

// tcpRunner adapts Launch to the conformance suite with a one-second round
// timeout: a silent general costs (m+2) timeouts.
func tcpRunner(spawn Spawner) conformance.Runner {
	return func(ctx context.Context, cfg byzantine.Config) (*byzantine.Result, error) {
		cfg.RoundTimeout = time.Second
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return Launch(ctx, cfg, spawn)
	}
}

// TestConformanceTCP runs the conformance suite over loopback TCP with the
// generals as goroutines of this process.
func TestConformanceTCP(t *testing.T) {
	conformance.Run(t, tcpRunner(LocalSpawner()))
}

// TestConformanceTCPProcesses runs part of the conformance suite with every
// general in its own OS process (a process start costs about 0.3 s under
// -race, so the whole suite runs over goroutines above).
func TestConformanceTCPProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	conformance.RunCases(t, tcpRunner(processSpawner(t)), conformance.Select(
		"OM/n4m1/loyal/B6-count",
		"OM/n7m2/loyal/B6-count",
		"OM/n4m1/commander-two-faced",
		"SM/n5m3/mixed",
		"OM/n4m1/lieutenant-crashes-round1",
	))
}

// BenchmarkTransportTCP runs the shared transport benchmark bodies over
// loopback TCP, generals as goroutines.
func BenchmarkTransportTCP(b *testing.B) {
	conformance.Benchmark(b, func(ctx context.Context, cfg byzantine.Config) (*byzantine.Result, error) {
		cfg.RoundTimeout = time.Second
		return Launch(ctx, cfg, LocalSpawner())
	})
}
