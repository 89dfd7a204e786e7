package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock"
	"dlm/redlock/redisproc"
	"dlm/redlock/rueidis"
)

// bench cluster: Redlock over nodes that are Redis Clusters against the
// same number of single masters, in one run on one machine: pairs/s at
// each goroutine count, CPU per pair (client and servers), how evenly the
// lock keys spread over each cluster's masters, and what the loss of one
// master costs.

// clusterConfig is one bench cluster run, from the flags.
type clusterConfig struct {
	nodes, masters int
	duration       time.Duration
	goroutines     []int
}

// runClusterBench is `bench cluster`.
func runClusterBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c clusterConfig
	var gs string
	fs.IntVar(&c.nodes, "nodes", 5, "Redlock nodes")
	fs.IntVar(&c.masters, "masters", 3, "masters of each cluster node")
	fs.DurationVar(&c.duration, "duration", 3*time.Second, "length of each throughput run")
	fs.StringVar(&gs, "goroutines", "64,256", "goroutine counts, comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, f := range strings.Split(gs, ",") {
		g, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || g < 1 {
			return fmt.Errorf("-goroutines: %q is not a positive number", f)
		}
		c.goroutines = append(c.goroutines, g)
	}
	if c.nodes < 1 || c.masters < 1 {
		return errors.New("-nodes and -masters must be at least 1")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	singles := make([]*redisproc.Process, c.nodes)
	clusters := make([]*redisproc.Cluster, c.nodes)
	errs := make([]error, 2*c.nodes)
	var wg sync.WaitGroup
	for i := 0; i < c.nodes; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); singles[i], errs[i] = redisproc.Start(ctx, redisproc.Config{}) }()
		go func() {
			defer wg.Done()
			clusters[i], errs[c.nodes+i] = redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: c.masters})
		}()
	}
	wg.Wait()
	defer func() {
		for i := range singles {
			if singles[i] != nil {
				singles[i].Close()
			}
			if clusters[i] != nil {
				clusters[i].Close()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var singleURLs, clusterURLs []string
	var clusterProcs []*redisproc.Process
	for i := range singles {
		singleURLs = append(singleURLs, singles[i].URL())
		clusterURLs = append(clusterURLs, clusters[i].URL())
		clusterProcs = append(clusterProcs, clusters[i].Masters()...)
	}
	fmt.Fprintf(stdout, "# Redlock over %d cluster nodes of %d masters against %d single masters\n\n", c.nodes, c.masters, c.nodes)
	fmt.Fprintf(stdout, "Adapter rueidis, one client, TryLock+Unlock pairs on distinct resources, %v per run; load average at the start %s.\n\n", c.duration, loadAvg())
	fmt.Fprintln(stdout, "| nodes | goroutines | pairs/s | client CPU µs/pair | servers CPU µs/pair | failed attempts |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|")
	type row struct {
		name  string
		urls  []string
		procs []*redisproc.Process
	}
	var perNode, perClusterNode []float64 // servers' CPU per pair per node, for the model
	for _, r := range []row{{"single masters", singleURLs, singles}, {fmt.Sprintf("clusters of %d", c.masters), clusterURLs, clusterProcs}} {
		for _, g := range c.goroutines {
			before := setCalls(ctx, clusterProcs)
			res, err := throughput(ctx, r.urls, r.procs, g, c.duration)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "| %s | %d | %.0f | %.1f | %.1f | %d |\n", r.name, g, res.rate, res.clientUS, res.serverUS, res.failed)
			if r.procs[0] == singles[0] {
				perNode = append(perNode, res.serverUS/float64(c.nodes))
				continue
			}
			perClusterNode = append(perClusterNode, res.serverUS/float64(c.nodes))
			if g == c.goroutines[0] {
				spread(stdout, clusters, before, setCalls(ctx, clusterProcs), c.masters)
			}
		}
	}
	// The loss of one master of node 0: its slots' locks fail on that node
	// only, and the other nodes make the quorum.
	clusters[0].Masters()[0].Kill()
	g := c.goroutines[0]
	res, err := throughput(ctx, clusterURLs, clusterProcs[1:], g, c.duration)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nWith master 0 of node 0 killed (%d goroutines): %.0f pairs/s, %.1f client CPU µs/pair, %d failed attempts.\n", g, res.rate, res.clientUS, res.failed)
	if len(perNode) > 0 && len(perClusterNode) > 0 {
		s, cl := perNode[0], perClusterNode[0]
		fmt.Fprintf(stdout, "\nOn paper (%d goroutines): one pair costs a single-master node %.1f µs of server CPU and a cluster node of %d masters %.1f µs (smaller batches per master). ", c.goroutines[0], s, c.masters, cl)
		fmt.Fprintf(stdout, "With each master on a core of its own, a node of M masters serves at most M / (cost per pair) pairs/s, bounded below by the cluster cost and above by the single-master one; the client's own CPU per pair (the table) bounds a client process long before:\n\n")
		fmt.Fprintln(stdout, "| masters per node | server-bound pairs/s per node (cluster cost) | (single-master cost) |")
		fmt.Fprintln(stdout, "|---|---|---|")
		for _, mm := range []int{1, 3, 10, 30} {
			fmt.Fprintf(stdout, "| %d | %.0f | %.0f |\n", mm, float64(mm)*1e6/cl, float64(mm)*1e6/s)
		}
	}
	return nil
}

// tpResult is one throughput run.
type tpResult struct {
	rate               float64
	clientUS, serverUS float64
	failed             int64
}

// throughput runs g goroutines of TryLock+Unlock pairs over urls for d, and
// measures the client's and procs' CPU.
func throughput(ctx context.Context, urls []string, procs []*redisproc.Process, g int, d time.Duration) (tpResult, error) {
	c, err := rueidis.Dial(urls, redlock.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		return tpResult{}, err
	}
	defer c.Close()
	cpu0, err := readCPU(ctx, procs)
	if err != nil {
		return tpResult{}, err
	}
	var pairs, failed atomic.Int64
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; rctx.Err() == nil; n++ {
				l, err := c.TryLock(rctx, "bench/"+strconv.Itoa(w)+"/"+strconv.Itoa(n))
				if err != nil {
					if rctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				_ = l.Unlock(ctx)
				pairs.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	cpu1, err := readCPU(ctx, procs)
	if err != nil {
		return tpResult{}, err
	}
	p := float64(max(pairs.Load(), 1))
	return tpResult{
		rate:     float64(pairs.Load()) / el.Seconds(),
		clientUS: float64(cpu1.client-cpu0.client) / float64(time.Microsecond) / p,
		serverUS: float64(cpu1.redis-cpu0.redis) / float64(time.Microsecond) / p,
		failed:   failed.Load(),
	}, nil
}

// setCalls reads each process's count of SET calls (INFO commandstats).
func setCalls(ctx context.Context, procs []*redisproc.Process) []int64 {
	out := make([]int64, len(procs))
	for i, p := range procs {
		info, err := p.Client().Info(ctx, "commandstats").Result()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_set:calls="); ok {
				n, _ := strconv.ParseInt(strings.Split(rest, ",")[0], 10, 64)
				out[i] = n
			}
		}
	}
	return out
}

// spread prints how the lock keys of a run spread over each cluster's
// masters: the share of the node's SETs each master took.
func spread(w io.Writer, clusters []*redisproc.Cluster, before, after []int64, masters int) {
	var worst float64
	for i := range clusters {
		var total int64
		for m := 0; m < masters; m++ {
			total += after[i*masters+m] - before[i*masters+m]
		}
		for m := 0; m < masters; m++ {
			share := float64(after[i*masters+m]-before[i*masters+m]) / float64(max(total, 1))
			worst = math.Max(worst, math.Abs(share-1/float64(masters)))
		}
	}
	fmt.Fprintf(w, "| | | key spread: every master took %.1f%% ± %.1f%% of its node's SETs | | | |\n", 100/float64(masters), 100*worst)
}
