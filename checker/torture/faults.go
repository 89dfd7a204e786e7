package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// Fault kinds of random mode (the Name of each row of faultTable).
const (
	FaultRestart     = "restart"         // SIGKILL and restart (delayed when DelayedRestart)
	FaultPauseNode   = "pause-node"      // SIGSTOP, then SIGCONT
	FaultLatency     = "latency"         // slow replies from one node
	FaultPartition   = "partition"       // one client group cut from two nodes
	FaultClockJump   = "clock-jump"      // a node's clock jumps forward past the ttl
	FaultPauseClient = "pause-client"    // a holder pauses past its validity, then writes
	FaultRolling     = "rolling-restart" // every node restarts in turn, each down past the ttl
)

// faultKind is one kind of fault of random mode: its name, what it does,
// which configurations it breaks, and how it is injected. faultTable is the
// one place a new fault goes.
type faultKind struct {
	// Name is the value of Config.Faults and of --faults.
	Name string
	// Does says what the fault does, in words.
	Does string
	// Default puts it in DefaultRandomFaults.
	Default bool
	// Breaks reports whether safety is lost under this fault in
	// configuration c (Config.Expect: no promise then).
	Breaks func(c Config) bool
	// inject injects one instance on node, lasting about dur, and returns
	// once it is healed (or, for pause-client, once it is armed). node and
	// dur are drawn before the call; inject may draw more from rng.
	inject func(ctx context.Context, e *env, rng *rand.Rand, node int, dur time.Duration, pauses []*pauseFlag) error
}

// restartSafe reports whether a node restarting empty inside the ttl
// leaves safety intact: persistence (R16.2), delayed restarts (R16.3) or a
// Byzantine quorum that outvotes the amnesiac node.
func (c Config) restartSafe() bool { return c.Persistence || c.DelayedRestart || c.Byzantine > 0 }

// faultTable is every fault kind random mode knows, in the order of
// AllFaults.
func faultTable() []faultKind {
	never := func(Config) bool { return false }
	return []faultKind{
		{Name: FaultRestart, Default: true, Does: "SIGKILL a node and restart it (after Config.RestartDelay when DelayedRestart)",
			Breaks: func(c Config) bool { return !c.restartSafe() }, inject: injectRestart},
		{Name: FaultPauseNode, Default: true, Does: "SIGSTOP a node, then SIGCONT", Breaks: never, inject: injectPauseNode},
		{Name: FaultLatency, Default: true, Does: "delay a node's replies by 4 node timeouts", Breaks: never, inject: injectLatency},
		{Name: FaultPartition, Default: true, Does: "cut one client group from a minority of the nodes", Breaks: never, inject: injectPartition},
		{Name: FaultClockJump, Does: "jump a node's clock forward by 2 ttl (libfaketime)",
			Breaks: func(c Config) bool { return c.Byzantine == 0 }, inject: injectClockJump},
		{Name: FaultPauseClient, Does: "pause a holder past its validity, then let it write",
			Breaks: func(c Config) bool { return !c.Fencing }, inject: injectPauseClient},
		{Name: FaultRolling, Does: "restart every node in turn (SIGKILL, down for ttl+ttl/4+100ms, restart), without persistence unless --persistence: each restart is late (R16.3), and fence values survive through the restart repair",
			Breaks: never, inject: injectRolling},
	}
}

// findFault returns the row of faultTable named name.
func findFault(name string) (faultKind, bool) {
	for _, f := range faultTable() {
		if f.Name == name {
			return f, true
		}
	}
	return faultKind{}, false
}

// DefaultRandomFaults returns the faults random mode draws from by default:
// crashes, pauses, latency and partitions, under which the configuration
// decides whether safety holds. Clock jumps and client pauses are added with
// Config.Faults.
func DefaultRandomFaults() []string {
	var out []string
	for _, f := range faultTable() {
		if f.Default {
			out = append(out, f.Name)
		}
	}
	return out
}

// AllFaults returns every fault kind random mode knows.
func AllFaults() []string {
	var out []string
	for _, f := range faultTable() {
		out = append(out, f.Name)
	}
	return out
}

func injectRestart(ctx context.Context, e *env, _ *rand.Rand, node int, _ time.Duration, _ []*pauseFlag) error {
	delay := e.cfg.restartDelay()
	end := e.rec.fault(FaultRestart, nodeName(node), fmt.Sprintf("SIGKILL, restart after %v, persistence %v", delay, e.cfg.Persistence))
	err := e.cl.procs[node].Restart(context.WithoutCancel(ctx), delay)
	end()
	if err != nil {
		return fmt.Errorf("torture: restart %s: %w", nodeName(node), err)
	}
	return nil
}

// injectRolling restarts every node in turn, starting at node, each down
// past the ttl (R16.3's delayed restart, whatever Config.DelayedRestart),
// the next one as soon as the previous one is back: the rolling restart of
// an upgrade. Without persistence every node forgets its keys, fence values
// included, so that fencing tokens (election terms) stay increasing only
// through the restart repair (redlock/fencing.go).
func injectRolling(ctx context.Context, e *env, _ *rand.Rand, node int, _ time.Duration, _ []*pauseFlag) error {
	delay := e.cfg.TTL + e.cfg.TTL/4 + 100*time.Millisecond
	n := len(e.cl.procs) // the single servers: not the cluster nodes of --cluster-nodes
	for k := range n {
		if ctx.Err() != nil {
			return nil
		}
		i := (node + k) % n
		end := e.rec.fault(FaultRolling, nodeName(i), fmt.Sprintf("node %d of %d: SIGKILL, restart after %v, persistence %v", k+1, n, delay, e.cfg.Persistence))
		err := e.cl.procs[i].Restart(context.WithoutCancel(ctx), delay)
		end()
		if err != nil {
			return fmt.Errorf("torture: rolling restart of %s: %w", nodeName(i), err)
		}
	}
	return nil
}

func injectPauseNode(ctx context.Context, e *env, _ *rand.Rand, node int, dur time.Duration, _ []*pauseFlag) error {
	end := e.rec.fault(FaultPauseNode, nodeName(node), fmt.Sprintf("SIGSTOP for %v", dur.Round(time.Millisecond)))
	e.cl.procs[node].Freeze()
	sleep(ctx, dur)
	e.cl.procs[node].Thaw()
	end()
	return nil
}

func injectLatency(ctx context.Context, e *env, _ *rand.Rand, node int, dur time.Duration, _ []*pauseFlag) error {
	d := 4 * e.cfg.NodeTimeout
	end := e.rec.fault(FaultLatency, nodeName(node), fmt.Sprintf("replies delayed %v for %v", d, dur.Round(time.Millisecond)))
	if err := e.cl.slow(node, d); err != nil {
		return err
	}
	sleep(ctx, dur)
	e.cl.unslow(context.WithoutCancel(ctx), node)
	end()
	return nil
}

func injectPartition(ctx context.Context, e *env, rng *rand.Rand, _ int, dur time.Duration, _ []*pauseFlag) error {
	g := rng.IntN(2)
	// A minority of the nodes, among the single servers (the cluster
	// nodes of --cluster-nodes have no proxy per client group).
	cutNodes := rng.Perm(len(e.cl.procs))[:min((e.cfg.Nodes-1)/2, len(e.cl.procs))]
	sort.Ints(cutNodes)
	end := e.rec.fault(FaultPartition, fmt.Sprintf("group%d|%s", g, names(cutNodes)), fmt.Sprintf("for %v", dur.Round(time.Millisecond)))
	for _, i := range cutNodes {
		if err := e.cl.cut(g, i); err != nil {
			return err
		}
	}
	sleep(ctx, dur)
	for _, i := range cutNodes {
		e.cl.heal(context.WithoutCancel(ctx), g, i)
	}
	end()
	return nil
}

func injectClockJump(_ context.Context, e *env, _ *rand.Rand, node int, _ time.Duration, _ []*pauseFlag) error {
	ttl := e.cfg.TTL
	end := e.rec.fault(FaultClockJump, nodeName(node), fmt.Sprintf("clock jumps forward %v", 2*ttl))
	err := e.cl.jump(node, 2*ttl)
	end()
	return err
}

func injectPauseClient(_ context.Context, _ *env, rng *rand.Rand, _ int, _ time.Duration, pauses []*pauseFlag) error {
	pauses[rng.IntN(len(pauses))].on.Store(true)
	return nil
}
