package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"dlm/checker"
	"dlm/redlock"
	"dlm/redlock/goredis"
)

// Demo settings.
const (
	demoNodes    = 5
	demoResource = "demo"
	demoPrefix   = "dlm:demo:"
)

// newDemoCmd builds "dlm demo".
func newDemoCmd() *cobra.Command {
	var (
		dc    demoConfig
		nodes []string
	)
	cmd := &cobra.Command{
		Use:   "demo [flags]",
		Short: "Watch workers share a lock over 5 nodes while nodes crash and return",
		Long: `Start 5 nodes and several workers that contend for one resource, with a
live view, while scripted faults play: one node killed (locks continue), a
second (still continue), a third (no quorum: workers wait), the nodes
restored with the delayed-restart rule (a crashed node comes back only
after the max ttl has passed), then normal operation.

The nodes are real redis-server processes when redis-server is on PATH, else
in-process Redis-protocol servers (miniredis): nothing needs installing. With
--nodes the demo runs against those nodes, without faults.

It ends with a summary: critical sections run, per phase, and the mutual
exclusion check (no two holders' windows overlapped, and a shared counter
incremented read-modify-write inside the lock lost no update). Exit 0 only
if mutual exclusion held, 1 otherwise.

The live view needs a terminal; --no-tui (automatic when stdout is not a
terminal) prints plain log lines instead.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case dc.duration < 2*time.Second:
				return usageErrorf("--duration must be at least 2s, got %v", dc.duration)
			case dc.duration > maxRunTime:
				return overDuration("--duration", dc.duration, maxRunTime)
			case dc.workers < 1 || dc.workers > 64:
				return usageErrorf("--workers must be from 1 to 64, got %d", dc.workers)
			}
			if len(nodes) > 0 {
				urls, err := resolveNodes(nodes)
				if err != nil {
					return err
				}
				dc.urls = urls
			}
			if !dc.noTUI && !isTerminal(cmd.OutOrStdout()) {
				dc.noTUI = true
			}
			if dc.seed == 0 {
				var b [8]byte
				if _, err := rand.Read(b[:]); err != nil {
					return err
				}
				dc.seed = binary.LittleEndian.Uint64(b[:]) >> 1
			}
			return runDemo(cmd.Context(), dc, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.DurationVar(&dc.duration, "duration", 24*time.Second, "how long the demo runs (the fault script scales with it)")
	f.IntVar(&dc.workers, "workers", 4, "number of workers contending for the lock")
	f.BoolVar(&dc.noTUI, "no-tui", false, "print plain log lines instead of the live view (automatic when stdout is not a terminal)")
	f.Uint64Var(&dc.seed, "seed", 0, "seed of the workers' random work times and retry delays (0: random, printed)")
	f.Var((*nodesValue)(&nodes), "nodes", "run against these node URLs, comma-separated, instead of starting nodes (no faults then)")
	f.StringVar(&dc.adapter, "adapter", defaultAdapter, "Redis client adapter of the workers: "+strings.Join(adapterNames(), " or "))
	addTLSFlags(cmd, &dc.tls)
	return cmd
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := rawWriter(w).(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// demoConfig is one demo run.
type demoConfig struct {
	duration time.Duration
	workers  int
	noTUI    bool
	seed     uint64
	urls     []string
	adapter  string
	tls      tlsFiles
}

// ttl is the demo's lock ttl: a twentieth of the run, within [100ms, 2s],
// so that a short run still shows every phase.
func (dc demoConfig) ttl() time.Duration {
	return min(max(dc.duration/20, 100*time.Millisecond), 2*time.Second)
}

// phase is one step of the fault script.
type phase struct {
	at    float64 // fraction of the duration
	name  string
	kill  int // node index to kill, or -1
	heal  bool
	about string
}

// demoScript returns the fault script: kill 1, kill 2 (locks continue),
// kill 3 (no quorum), restore with delayed restarts (R16.3), normal
// operation.
func demoScript() []phase {
	return []phase{
		{0, "all up", -1, false, "all nodes up at the start: workers contend for the lock"},
		{0.15, "1 down", 0, false, "node-1 crashed: 4 of 5 up, a quorum (3) is still possible, so locks continue"},
		{0.30, "2 down", 1, false, "node-2 crashed: 3 of 5 up, exactly a quorum, locks continue"},
		{0.45, "3 down", 2, false, "node-3 crashed: 2 of 5 up, NO QUORUM: no lock can be granted, workers wait"},
		{0.60, "restored", -1, true, "crashed nodes restored, each after the max ttl; then normal operation"},
	}
}

// nodeView is the live state of one node.
type nodeView struct {
	Name, Addr string
	Up         bool
	Note       string
	Keys       int
	// Held is true while the fault script holds the node down (crashed,
	// or waiting for its delayed restart): the monitor leaves it alone
	// then, and probes it again as soon as the script brings it back.
	Held bool
}

// workerView is the live state of one worker.
type workerView struct {
	State    string // waiting, holding, idle
	Reason   string
	Acquired int
}

// demo is a running demo: its state is read by the view under mu.
type demo struct {
	cfg     demoConfig
	backend *demoBackend
	ttl     time.Duration
	start   time.Time
	quorum  int // the client's (redlock.Client.Quorum)

	counter  atomic.Int64 // the shared resource: read-modify-write under the lock
	sections atomic.Int64

	mu       sync.Mutex
	nodes    []nodeView
	workers  []workerView
	phase    int
	perPhase []int
	holder   int // worker index, -1 when free
	until    time.Time
	windows  []holdWindow
	overran  int // sections that wrote nothing: the validity had passed
	clashes  int // sections whose write met another holder's
	events   []string
	logw     io.Writer // plain log lines (no-tui), else nil
}

// event records a line for the view (and the log in no-tui mode).
func (d *demo) event(format string, args ...any) {
	line := fmt.Sprintf("+%5.1fs  ", time.Since(d.start).Seconds()) + fmt.Sprintf(format, args...)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, line)
	if d.logw != nil {
		fmt.Fprintln(d.logw, line)
	}
}

// runDemo runs the demo and prints its summary; the error carries exit 1
// when mutual exclusion did not hold.
func runDemo(ctx context.Context, dc demoConfig, stdin io.Reader, stdout io.Writer) error {
	backend, err := startDemoNodes(ctx, demoNodes, dc.urls)
	if err != nil {
		return withCode(exitUnavailable, fmt.Errorf("start demo nodes: %w", err))
	}
	defer backend.close()
	fmt.Fprintln(stdout, backend.Desc)
	d := &demo{cfg: dc, backend: backend, ttl: dc.ttl(), holder: -1, perPhase: make([]int, len(demoScript()))}
	urls := make([]string, len(backend.Nodes))
	for i, n := range backend.Nodes {
		urls[i] = n.URL()
		u, _ := redlock.ParseNodeURL(urls[i])
		d.nodes = append(d.nodes, nodeView{Name: fmt.Sprintf("node-%d", i+1), Addr: u.String(), Up: true})
	}
	d.workers = make([]workerView, dc.workers)
	fmt.Fprintf(stdout, "dlm demo: %d workers, lock ttl %v, duration %v, seed %d (--seed %d replays the workers' random choices)\n",
		dc.workers, d.ttl, dc.duration, dc.seed, dc.seed)

	cfgs, err := dc.tls.forURLs(urls)
	if err != nil {
		return err
	}
	client, closeClient, err := dial(dc.adapter, urls, dc.tls, 0, redlock.WithTTL(d.ttl), redlock.WithKeyPrefix(demoPrefix), redlock.WithRetrySeed(dc.seed))
	if err != nil {
		return err
	}
	defer closeClient()

	// The real count of nodes up, before anything runs.
	up, err := countUp(ctx, urls, cfgs, time.Second)
	if err != nil {
		return withCode(exitUsage, err)
	}
	q := client.Quorum()
	d.quorum = q
	first := fmt.Sprintf("%d of %d nodes up, quorum %d", up, len(urls), q)
	if up < q {
		fmt.Fprintln(stdout, "dlm demo: "+first)
		return withCode(exitUnavailable, fmt.Errorf("only %d of %d nodes up, a quorum needs %d: no lock can be acquired, nothing to show", up, len(urls), q))
	}

	rctx, cancel := context.WithTimeout(ctx, dc.duration)
	defer cancel()
	d.start = time.Now()
	var wg sync.WaitGroup
	wg.Add(2 + dc.workers)
	go func() { defer wg.Done(); d.monitor(rctx, urls, cfgs) }()
	go func() { defer wg.Done(); d.script(rctx) }()
	for i := 0; i < dc.workers; i++ {
		go func() { defer wg.Done(); d.worker(rctx, client, i) }()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()

	if dc.noTUI {
		d.mu.Lock()
		d.logw = stdout
		d.mu.Unlock()
		d.event("%s", first)
		d.plainLoop(rctx, finished)
	} else if err := d.runTUI(stdin, stdout, cancel, finished); err != nil {
		cancel()
		<-finished
		fmt.Fprintf(stdout, "dlm demo: live view failed (%v); summary follows\n", err)
	}
	<-finished
	return d.summary(stdout)
}

// countUp counts the nodes of urls that answer a PING within timeout.
func countUp(ctx context.Context, urls []string, cfgs []*tls.Config, timeout time.Duration) (int, error) {
	parsed, err := redlock.ParseNodeURLs(urls)
	if err != nil {
		return 0, err
	}
	clients := make([]*redis.Client, len(parsed))
	for i, u := range parsed {
		clients[i] = goredisTLS(goredis.NewClient(u), cfgs[i])
		defer clients[i].Close()
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if c.Ping(pctx).Err() == nil {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load()), nil
}

// plainLoop prints a status line every tenth of the run until the demo ends.
func (d *demo) plainLoop(ctx context.Context, finished <-chan struct{}) {
	every := max(d.cfg.duration/10, 500*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-finished:
			return
		case <-t.C:
			d.mu.Lock()
			line := d.statusLine()
			d.mu.Unlock()
			d.event("%s", line)
		}
	}
}

// statusLine summarises the state in one line; mu must be held.
func (d *demo) statusLine() string {
	up := 0
	for _, n := range d.nodes {
		if n.Up {
			up++
		}
	}
	waiting, reasons := 0, map[string]bool{}
	var why []string
	for _, w := range d.workers {
		if w.State == "waiting" {
			waiting++
			if r := w.Reason; r != "" && !reasons[r] {
				reasons[r] = true
				why = append(why, r)
			}
		}
	}
	holder := "none"
	if d.holder >= 0 {
		holder = fmt.Sprintf("worker-%d (validity %v)", d.holder+1, max(0, time.Until(d.until)).Round(time.Millisecond))
	}
	line := fmt.Sprintf("nodes up %d/%d, acquisitions %d, holder %s, waiting %d", up, len(d.nodes), len(d.windows), holder, waiting)
	if len(why) > 0 {
		line += " (" + strings.Join(why, "; ") + ")"
	}
	return line
}

// script plays the fault script (nodes the demo owns only).
func (d *demo) script(ctx context.Context) {
	if !d.backend.Owned {
		return
	}
	killed := map[int]time.Time{}
	maxTTL := d.ttl + d.ttl/5 // "a little longer than the max ttl" (R16.3)
	for pi, ph := range demoScript()[1:] {
		t := time.NewTimer(time.Until(d.start.Add(time.Duration(ph.at * float64(d.cfg.duration)))))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		switch {
		case ph.kill >= 0:
			d.backend.Nodes[ph.kill].Kill()
			killed[ph.kill] = time.Now()
			d.setNode(ph.kill, false, "crashed (keys lost)")
		case ph.heal:
			d.mu.Lock()
			d.phase = pi + 1
			d.mu.Unlock()
			d.event("restoring the crashed nodes, newest crash first, each only after the max ttl %v has passed since its crash", maxTTL)
			for i := len(d.backend.Nodes) - 1; i >= 0; i-- {
				at, ok := killed[i]
				if !ok {
					continue
				}
				if wait := time.Until(at.Add(maxTTL)); wait > 0 {
					d.setNode(i, false, fmt.Sprintf("delayed restart: waiting %v", wait.Round(time.Millisecond)))
					w := time.NewTimer(wait)
					select {
					case <-ctx.Done():
						w.Stop()
						return
					case <-w.C:
					}
				}
				if err := d.backend.Nodes[i].Start(ctx); err != nil {
					d.event("node-%d did not restart: %v", i+1, err)
					continue
				}
				d.setNode(i, true, "")
				d.event("node-%d restarted empty, %v after its crash (> max ttl %v: every key it held had expired)", i+1, time.Since(at).Round(time.Millisecond), maxTTL)
			}
		}
		d.mu.Lock()
		d.phase = pi + 1
		d.mu.Unlock()
		d.event("%s", ph.about)
	}
}

// setNode records what the script did to node i: down (held down until the
// script says otherwise) or back up.
func (d *demo) setNode(i int, up bool, note string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nodes[i].Up, d.nodes[i].Note, d.nodes[i].Held = up, note, !up
	if !up {
		d.nodes[i].Keys = 0
	}
}

// monitor polls every node, concurrently, for liveness and its lock keys,
// until ctx ends. A node the script holds down is left alone; every other
// node shows what its last poll found, so a restarted node is seen up again
// at the first poll after its restart.
func (d *demo) monitor(ctx context.Context, urls []string, cfgs []*tls.Config) {
	parsed, err := redlock.ParseNodeURLs(urls)
	if err != nil {
		return
	}
	clients := make([]*redis.Client, len(parsed))
	for i, u := range parsed {
		clients[i] = goredisTLS(goredis.NewClient(u), cfgs[i])
		defer clients[i].Close()
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	// A node seen up counts as down only after two polls in a row found
	// nothing: one slow answer on a busy machine is not a crash.
	misses := make([]int, len(clients))
	for {
		up, keys := pollNodes(ctx, clients, 300*time.Millisecond)
		if ctx.Err() != nil {
			return
		}
		d.mu.Lock()
		for i := range d.nodes {
			n := &d.nodes[i]
			if up[i] {
				misses[i] = 0
			} else {
				misses[i]++
			}
			switch {
			case n.Held:
				// the script holds it down
			case !up[i] && (!n.Up || misses[i] >= 2):
				n.Up, n.Keys, n.Note = false, 0, "unreachable"
			case up[i]:
				n.Up, n.Keys, n.Note = true, keys[i], ""
			}
		}
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollNodes asks every node at once for its keys under the demo's prefix,
// each within timeout, and reports which answered. A node that fails once
// (a pooled connection to a server that has since restarted) is asked once
// more on a fresh connection before it counts as down.
func pollNodes(ctx context.Context, clients []*redis.Client, timeout time.Duration) (up []bool, keys []int) {
	up, keys = make([]bool, len(clients)), make([]int, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for try := 0; try < 2 && !up[i] && ctx.Err() == nil; try++ {
				pctx, cancel := context.WithTimeout(ctx, timeout)
				n, err := countKeys(pctx, c, demoPrefix)
				cancel()
				up[i], keys[i] = err == nil, n
			}
		}()
	}
	wg.Wait()
	return up, keys
}

// countKeys counts the keys under prefix on one node.
func countKeys(ctx context.Context, c *redis.Client, prefix string) (int, error) {
	n := 0
	iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		n++
	}
	return n, iter.Err()
}

// worker contends for the resource until ctx ends: acquire, run the
// critical section (a read-modify-write of the shared counter), release.
func (d *demo) worker(ctx context.Context, client *redlock.Client, i int) {
	rng := mrand.New(mrand.NewPCG(d.cfg.seed, uint64(i)))
	span := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	pause := func(dur time.Duration) bool {
		t := time.NewTimer(dur)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for ctx.Err() == nil {
		d.setWorker(i, "waiting", "")
		l, err := client.TryLock(ctx, demoResource)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.setWorker(i, "waiting", d.waitReason(err))
			pause(span(redlock.DefaultRetryMin, redlock.DefaultRetryMax)) // R10: random retry delay
			continue
		}
		start := time.Now()
		d.mu.Lock()
		d.holder, d.until = i, l.Until()
		d.workers[i].State, d.workers[i].Reason = "holding", ""
		d.workers[i].Acquired++
		d.perPhase[d.phase]++
		d.mu.Unlock()

		// The critical section: read, work, write. Two holders at once
		// would lose an update. A section whose work ran past the
		// lock's validity (a worker starved on a busy machine) writes
		// nothing: the lock may be another's by then. The write is a
		// compare-and-swap, so that an update two holders made at once
		// is seen, not lost.
		v := d.counter.Load()
		pause(span(d.ttl/10, d.ttl/4))
		end, until := time.Now(), l.Until()
		d.commit(v, end, until)

		d.mu.Lock()
		w := holdWindow{Worker: i, Start: start, End: end}
		if end.After(until) {
			w.End = until // the checker judges the lock's window
		}
		d.windows = append(d.windows, w)
		if d.holder == i {
			d.holder = -1
		}
		d.workers[i].State = "idle"
		d.mu.Unlock()
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = l.Unlock(uctx)
		cancel()
		pause(span(0, d.ttl/10))
	}
}

// commit ends a critical section that read v from the counter: it writes
// v+1 when the section ended (end) within the lock's validity (until), by
// compare-and-swap, and reports whether it wrote. A late section writes
// nothing (overran); a write that meets another holder's is a clash.
func (d *demo) commit(v int64, end, until time.Time) bool {
	late := !end.Before(until)
	clash := !late && !d.counter.CompareAndSwap(v, v+1)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case late:
		d.overran++
		return false
	case clash:
		d.clashes++
		return false
	}
	d.sections.Add(1)
	return true
}

// waitReason says why an acquisition failed, for the view.
func (d *demo) waitReason(err error) string {
	var ae *redlock.AcquireError
	if !errors.As(err, &ae) {
		return err.Error()
	}
	if unreachable(err) {
		return fmt.Sprintf("no quorum: %d of %d nodes down, a quorum needs %d up", ae.Count(redlock.Failed)+ae.Count(redlock.TimedOut), len(ae.Nodes), ae.Quorum)
	}
	d.mu.Lock()
	h := d.holder
	d.mu.Unlock()
	if h >= 0 {
		return fmt.Sprintf("held by worker-%d", h+1)
	}
	return "held elsewhere"
}

func (d *demo) setWorker(i int, state, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.workers[i].State, d.workers[i].Reason = state, reason
}

// summary prints the results and returns an exit-1 error when mutual
// exclusion did not hold.
func (d *demo) summary(w io.Writer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	elapsed := time.Since(d.start).Round(100 * time.Millisecond)
	sections, counter := d.sections.Load(), d.counter.Load()
	fmt.Fprintf(w, "\nsummary: %d critical sections by %d workers in %v\n", sections, len(d.workers), elapsed)
	if d.backend.Owned {
		var parts []string
		for i, ph := range demoScript() {
			parts = append(parts, fmt.Sprintf("%s: %d", ph.name, d.perPhase[i]))
		}
		fmt.Fprintf(w, "  acquisitions per phase: %s\n", strings.Join(parts, ", "))
	}
	for i, wk := range d.workers {
		fmt.Fprintf(w, "  worker-%d: %d acquisitions\n", i+1, wk.Acquired)
	}
	up := 0
	for _, n := range d.nodes {
		if n.Up {
			up++
		}
	}
	fmt.Fprintf(w, "  nodes up %d/%d at the end\n", up, len(d.nodes))
	res := checkExclusion(d.start, len(d.nodes), d.windows)
	ok := res.Verdict == checker.OK
	lost := counter != sections || d.clashes > 0
	if d.overran > 0 {
		fmt.Fprintf(w, "  %d critical section(s) outlasted the lock's validity and wrote nothing (their windows end at the validity)\n", d.overran)
	}
	if ok && !lost {
		fmt.Fprintf(w, "mutual exclusion: HELD: no two holders' windows overlapped (%d windows checked by the checker's mutex check), and the shared counter is %d = %d sections (no lost update)\n", len(d.windows), counter, sections)
		return nil
	}
	var why []string
	if !ok {
		why = append(why, "the checker's mutual-exclusion check says "+res.String())
	}
	if lost {
		why = append(why, fmt.Sprintf("shared counter %d, %d sections, %d write(s) met another holder's", counter, sections, d.clashes))
	}
	fmt.Fprintf(w, "mutual exclusion: VIOLATED: %s\n", strings.Join(why, "; "))
	return withCode(exitFailure, errors.New("mutual exclusion violated: "+strings.Join(why, "; ")))
}
