package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"dlm/lockload"
	"dlm/redlock"
)

// benchConfig is one dlm bench run, from the flags.
type benchConfig struct {
	nodes      []string
	duration   time.Duration
	goroutines []int
	seq        time.Duration
	workers    int
	hold       time.Duration
	holdMode   string
	contention time.Duration
	ttl        time.Duration
	nodeTO     time.Duration
	adapter    string
	tls        tlsFiles
	quiet      bool
}

// newBenchCmd builds "dlm bench": dlm's own throughput, latency and
// contention figures against the given nodes.
func newBenchCmd() *cobra.Command {
	var c benchConfig
	var gs []string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure lock throughput, latency and contention against your nodes",
		Long: `dlm bench measures this client against the given nodes, so that you can see
what your deployment does:

  throughput   acquire+release pairs per second, one attempt each, from N
               goroutines on distinct resources (--goroutines, --duration)
  sequential   the latency of one acquire+release pair from one goroutine,
               p50 and p99 (--seq)
  contention   critical sections per second when --workers goroutines fight
               for one resource, each holding it for --hold, and fairness:
               the busiest worker's count over the least busy one's

It locks resources named dlm-bench/<random>/..., never your own, and
releases every lock it takes. For a comparison with other libraries on
local nodes, see the bench/ module of the source tree.`,
		Example: `  dlm bench --nodes redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379
  DLM_NODES=... dlm bench --goroutines 1,64,256 --duration 5s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if c.nodes, err = resolveNodes(c.nodes); err != nil {
				return err
			}
			if c.goroutines, err = parseCounts(gs); err != nil {
				return err
			}
			if err := c.validate(); err != nil {
				return err
			}
			return runBench(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	addNodesFlag(cmd, &c.nodes)
	f.DurationVar(&c.duration, "duration", 2*time.Second, "length of each throughput run")
	f.StringSliceVar(&gs, "goroutines", []string{"1", "16", "64", "256"}, "goroutine counts of the throughput runs")
	f.DurationVar(&c.seq, "seq", time.Second, "length of the sequential run")
	f.IntVar(&c.workers, "workers", 32, "workers of the contention run (0: skip it)")
	f.DurationVar(&c.hold, "hold", time.Millisecond, "how long each contention worker holds the lock")
	f.StringVar(&c.holdMode, "hold-mode", "sleep", "how a contention worker holds: sleep (time.Sleep) or block (one blocking nanosleep, exact to the runtime's timers)")
	f.DurationVar(&c.contention, "contention", 3*time.Second, "length of the contention run")
	f.DurationVar(&c.ttl, "ttl", 10*time.Second, "lock validity time of the benchmark's locks")
	f.DurationVar(&c.nodeTO, "node-timeout", redlock.DefaultNodeTimeout, "time each node has to answer a request")
	f.StringVar(&c.adapter, "adapter", defaultAdapter, "Redis client adapter: "+strings.Join(adapterNames(), " or "))
	addTLSFlags(cmd, &c.tls)
	f.BoolVarP(&c.quiet, "quiet", "q", false, "no progress bar")
	return cmd
}

// benchOnTerminal reports whether w is a terminal (the progress bar is drawn
// only there).
func benchOnTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// parseCounts parses --goroutines.
func parseCounts(fields []string) ([]int, error) {
	var out []int
	for _, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, usageErrorf("--goroutines: %q is not a positive number; expected a list such as 1,16,64", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, usageErrorf("--goroutines: empty; expected a list such as 1,16,64")
	}
	return out, nil
}

func (c benchConfig) validate() error {
	if _, err := findAdapter(c.adapter); err != nil {
		return err
	}
	if err := firstErr(overDuration("--duration", c.duration, maxRunTime), overDuration("--seq", c.seq, maxRunTime),
		overDuration("--contention", c.contention, maxRunTime), overDuration("--ttl", c.ttl, maxLockTTL),
		overCount("--workers", c.workers, maxBenchGoroutines)); err != nil {
		return err
	}
	for _, g := range c.goroutines {
		if err := overCount("--goroutines", g, maxBenchGoroutines); err != nil {
			return err
		}
	}
	switch {
	case c.duration <= 0:
		return usageErrorf("--duration must be positive, got %v", c.duration)
	case c.seq <= 0:
		return usageErrorf("--seq must be positive, got %v", c.seq)
	case c.workers < 0:
		return usageErrorf("--workers must be 0 (skip) or more, got %d", c.workers)
	case c.workers > 0 && c.contention <= 0:
		return usageErrorf("--contention must be positive, got %v", c.contention)
	case c.hold < 0:
		return usageErrorf("--hold must not be negative, got %v", c.hold)
	case c.holdMode != "sleep" && c.holdMode != "block":
		return usageErrorf("--hold-mode: unknown mode %q; expected sleep or block", c.holdMode)
	case c.nodeTO <= 0 || c.nodeTO >= c.ttl:
		return usageErrorf("--node-timeout must be positive and well under --ttl %v, got %v", c.ttl, c.nodeTO)
	case c.hold >= c.ttl:
		return usageErrorf("--hold %v must be well under --ttl %v", c.hold, c.ttl)
	}
	return nil
}

// runBench runs the workloads, with a progress bar on stderr, and prints
// the results on stdout.
func runBench(ctx context.Context, c benchConfig, stdout, stderr io.Writer) error {
	opts := []redlock.Option{redlock.WithTTL(c.ttl), redlock.WithNodeTimeout(c.nodeTO)}
	client, closeClient, err := dial(c.adapter, c.nodes, c.tls, 0, opts...)
	if err != nil {
		return err
	}
	defer closeClient()
	locker := lockload.Client(client)
	var id [6]byte
	_, _ = rand.Read(id[:])
	prefix := "dlm-bench/" + hex.EncodeToString(id[:]) + "/"

	// Preflight: one pair, so that unreachable nodes fail fast and clearly.
	l, err := client.TryLock(ctx, prefix+"preflight")
	if err != nil {
		return withCode(exitUnavailable, fmt.Errorf("cannot lock on the nodes: %w", err))
	}
	if err := l.Unlock(ctx); err != nil {
		return withCode(exitUnavailable, fmt.Errorf("cannot release on the nodes: %w", err))
	}

	total := time.Duration(len(c.goroutines))*c.duration + c.seq
	if c.workers > 0 {
		total += c.contention
	}
	bar := progressbar.NewOptions64(total.Milliseconds(),
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetVisibility(!c.quiet && benchOnTerminal(stderr)),
		progressbar.OptionSetDescription("bench"),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
	// step runs f for d of the bar, advancing the bar as time passes.
	step := func(name string, d time.Duration, f func()) {
		bar.Describe(name)
		start := time.Now()
		base := bar.State().CurrentNum
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					_ = bar.Set64(base + min(time.Since(start), d).Milliseconds())
				}
			}
		}()
		f()
		close(done)
		wg.Wait()
		_ = bar.Set64(base + d.Milliseconds())
	}

	fmt.Fprintf(stdout, "dlm bench: %d nodes (quorum %d), %s adapter: %s\n\n", len(c.nodes), client.Quorum(), c.adapter, strings.Join(client.Nodes(), ", "))
	type tpRow struct {
		g      int
		perSec float64
		failed int64
	}
	var rows []tpRow
	for _, g := range c.goroutines {
		var r tpRow
		step(fmt.Sprintf("throughput, %d goroutines", g), c.duration, func() {
			r = tpRow{g: g}
			tp := lockload.Throughput(ctx, locker, prefix+"tp/"+strconv.Itoa(g)+"/", g, c.duration)
			r.perSec, r.failed = tp.PerSec, tp.Failed
		})
		rows = append(rows, r)
		if ctx.Err() != nil {
			break
		}
	}
	var seq lockload.SeqResult
	var seqErr error
	if ctx.Err() == nil {
		step("sequential", c.seq, func() { seq, seqErr = lockload.Sequential(ctx, locker, prefix+"seq", c.seq) })
	}
	var cont lockload.ContResult
	if c.workers > 0 && ctx.Err() == nil {
		step(fmt.Sprintf("contention, %d workers", c.workers), c.contention, func() {
			how := time.Sleep
			if c.holdMode == "block" {
				how = lockload.HoldBlocking
			}
			cont = lockload.ContentionHeld(ctx, locker, prefix+"cont", c.workers, c.hold, c.contention, how)
		})
	}
	_ = bar.Finish()
	if err := ctx.Err(); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "Throughput, distinct resources (acquire+release pairs/s, one attempt each, %v per run)\n", c.duration)
	fmt.Fprintf(stdout, "  %10s  %12s  %8s\n", "goroutines", "pairs/s", "failed")
	for _, r := range rows {
		fmt.Fprintf(stdout, "  %10d  %12.0f  %8d\n", r.g, r.perSec, r.failed)
	}
	fmt.Fprintln(stdout)
	if seqErr != nil {
		return withCode(exitUnavailable, fmt.Errorf("sequential run: %w", seqErr))
	}
	fmt.Fprintf(stdout, "Sequential, one goroutine (%d pairs)\n", seq.Pairs)
	fmt.Fprintf(stdout, "  acquire+release p50 %v  p99 %v; acquire alone p50 %v\n\n",
		seq.PairP50.Round(time.Microsecond), seq.PairP99.Round(time.Microsecond), seq.AcquireP50.Round(time.Microsecond))
	if c.workers > 0 {
		fmt.Fprintf(stdout, "Contention, %d workers on one resource, %v hold (%s)\n", c.workers, c.hold, c.holdMode)
		fair := "n/a (a worker got none)"
		if !math.IsInf(cont.Fairness, 1) && cont.Fairness > 0 {
			fair = fmt.Sprintf("%.2f", cont.Fairness)
		}
		fmt.Fprintf(stdout, "  %.0f critical sections/s; busiest/least busy worker %s; %d errors\n", cont.PerSec, fair, cont.Failed)
	}
	return nil
}
