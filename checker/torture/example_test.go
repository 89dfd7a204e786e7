package torture_test

import (
	"context"
	"fmt"
	"strings"

	"dlm/checker"
	"dlm/checker/torture"
)

// A history in which B acquired while A's validity was still running: the
// shape of R16.1, a node of A's majority restarted empty.
const overlapping = `{"nodes": 5, "fenced": false,
 "faults": [{"kind": "restart", "target": "node0", "start": 100000000, "end": 180000000, "note": "SIGKILL, restart without persistence"}],
 "ops": [
  {"id": 1, "client": "A", "resource": "r", "kind": "acquire", "lock": "A#1", "start": 0, "end": 5000000, "ok": true, "ttl": 1000000000, "until": 988000000},
  {"id": 2, "client": "B", "resource": "r", "kind": "acquire", "lock": "B#1", "start": 300000000, "end": 302000000, "ok": true, "ttl": 1000000000, "until": 1290000000}
 ]}`

// Analyze judges a history against what a configuration promises: the same
// overlap is the expected outcome of restart-without-persistence, and a
// broken promise under delayed-restart.
func ExampleAnalyze() {
	h, err := checker.DecodeHistory(strings.NewReader(overlapping))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"restart-without-persistence", "delayed-restart"} {
		rep := torture.Analyze(torture.DefaultConfig(name), h)
		fmt.Printf("%s: expected %s; %s (matches: %v)\n", name, rep.Expected, rep.Outcome, rep.Matches)
	}
	// Output:
	// restart-without-persistence: expected violation expected; violation reproduced, as expected (matches: true)
	// delayed-restart: expected no violation; safety violated where it is promised (matches: false)
}

// Every configuration states what it promises under its scenario's faults.
func ExampleConfig_Expect() {
	for _, c := range []struct {
		name   string
		fenced bool
	}{{"client-pause", false}, {"client-pause", true}, {"fsync-always", false}} {
		cfg := torture.DefaultConfig(c.name)
		cfg.Fencing = c.fenced
		fmt.Printf("%s fencing=%v: %s\n", c.name, c.fenced, cfg.Expect())
	}
	// Output:
	// client-pause fencing=false: violation expected
	// client-pause fencing=true: no violation
	// fsync-always fencing=false: no violation
}

// Run starts real redis-server processes, injects the scenario's faults and
// checks what it recorded. (Not run as a test: it needs redis-server.)
func ExampleRun() {
	cfg := torture.DefaultConfig("restart-without-persistence")
	cfg.Seed = 42 // the same seed replays the same choices
	rep, err := torture.Run(context.Background(), cfg)
	if err != nil {
		fmt.Println(err) // errors.Is(err, torture.ErrEnvironment): redis-server missing
		return
	}
	fmt.Println(rep.Outcome)
	if rep.Counterexample != nil {
		fmt.Println(*rep.Counterexample)
	}
}
