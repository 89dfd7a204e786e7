// Command bench compares dlm's Redlock client with go-redsync (and, as
// references, minimal Redlocks, bsm/redislock and rueidislock on one node,
// and flock(2) on one host in the contention workloads) on 5 real
// redis-server nodes it starts itself, running its workloads for each
// library in turn,
// several times, and printing the medians and ratios as Markdown, with an
// SVG plot of throughput against goroutines:
//
//	cd bench && go run . -reps 3 -plot ../docs/benchmarks-redlock.svg
//
// It is a separate module so that the main module does not depend on the
// libraries it is compared with.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"

	"dlm/lockload"
	"dlm/redlock"
	"dlm/redlock/redisproc"
	"dlm/redlock/rueidis"
)

func main() {
	if isChild, err := runChild(os.Stdin, os.Stdout); isChild {
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// config is one run's settings, from the flags.
type config struct {
	reps       int
	duration   time.Duration
	seqDur     time.Duration
	goroutines []int
	workers    int
	hold       time.Duration
	holdMode   string
	contDur    time.Duration
	frozenN    int
	busy       int
	procs      int
	procWork   int
	plot       string
	profile    string
	out        string
	only       map[string]bool
	libs       map[string]bool // nil: all
	tune       []rueidis.Option
	dlmOpts    []redlock.Option
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var gs string
	fs.IntVar(&c.reps, "reps", 3, "repetitions of every run (medians are reported)")
	fs.DurationVar(&c.duration, "duration", 2*time.Second, "length of each throughput run")
	fs.DurationVar(&c.seqDur, "seq", time.Second, "length of each sequential run")
	fs.StringVar(&gs, "goroutines", "1,4,16,64,256", "goroutine counts of the throughput runs, comma-separated")
	fs.IntVar(&c.workers, "workers", 32, "workers of the contention run")
	fs.DurationVar(&c.hold, "hold", time.Millisecond, "how long each contention worker holds the lock")
	fs.StringVar(&c.holdMode, "hold-mode", "sleep", "how a contention worker holds: sleep (time.Sleep, the default) or block (one blocking nanosleep, exact to the runtime's timers)")
	fs.DurationVar(&c.contDur, "contention", 3*time.Second, "length of each contention run")
	fs.IntVar(&c.busy, "busy", 0, "keep this many cores busy with spinning processes during the whole run (a reproducible loaded machine)")
	fs.IntVar(&c.procs, "procs", 8, "processes of the contention across processes")
	fs.IntVar(&c.procWork, "proc-workers", 4, "workers in each process of the contention across processes")
	fs.IntVar(&c.frozenN, "frozen", 40, "acquisitions timed with one node frozen (and as many healthy)")
	fs.StringVar(&c.plot, "plot", "", "write the SVG plot of throughput against goroutines to this file")
	fs.StringVar(&c.out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of this process for every throughput run to this directory (tp-LIB-G-REP.pprof)")
	flush := fs.Duration("flush", -1, "dlm (rueidis): max flush delay of each node's connection (-1: the adapter's default, 0)")
	limit := fs.Int("handoff-limit", 0, "dlm: WithHandoffLimit, hand-overs in a row within one client before a release is announced to all (0: redlock.DefaultHandoffLimit)")
	nodeTO := fs.Duration("node-timeout", 0, "dlm: per-node timeout (0: redlock.DefaultNodeTimeout; go-redsync's is 400ms with its defaults)")
	libsOnly := fs.String("libs", "", "run only these libraries, comma-separated names as in the tables (default: all)")
	only := fs.String("only", "tp,seq,frozen,cont,mp", "workloads to run: tp (throughput), seq (sequential), frozen (one node frozen), cont (contention in one process), mp (contention across processes)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if *flush >= 0 {
		c.tune = append(c.tune, rueidis.WithMaxFlushDelay(*flush))
	}
	if *nodeTO < 0 {
		return c, fmt.Errorf("-node-timeout must not be negative, got %v", *nodeTO)
	}
	if *limit < 0 {
		return c, fmt.Errorf("-handoff-limit must not be negative, got %d", *limit)
	}
	if *limit > 0 {
		c.dlmOpts = append(c.dlmOpts, redlock.WithHandoffLimit(*limit))
	}
	if *nodeTO > 0 {
		c.dlmOpts = append(c.dlmOpts, redlock.WithNodeTimeout(*nodeTO))
	}
	if *libsOnly != "" {
		c.libs = map[string]bool{}
		known := map[string]bool{libDLMNoHandoff: true, libFlock: true}
		for _, l := range libraries(nil, nil) {
			known[l.name] = true
		}
		for _, n := range strings.Split(*libsOnly, ",") {
			n = strings.TrimSpace(n)
			if !known[n] {
				return c, fmt.Errorf("-libs: unknown library %q; expected names such as %q, %q, %q", n, libDLM, libRedsync, libRueidislock)
			}
			c.libs[n] = true
		}
	}
	c.only = map[string]bool{}
	for _, w := range strings.Split(*only, ",") {
		switch w = strings.TrimSpace(w); w {
		case "tp", "seq", "frozen", "cont", "mp":
			c.only[w] = true
		default:
			return c, fmt.Errorf("-only: unknown workload %q; expected tp, seq, frozen, cont or mp", w)
		}
	}
	for _, f := range strings.Split(gs, ",") {
		g, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || g < 1 {
			return c, fmt.Errorf("-goroutines: %q is not a positive number; expected a list such as 1,16,64,256", f)
		}
		c.goroutines = append(c.goroutines, g)
	}
	switch {
	case c.reps < 1:
		return c, fmt.Errorf("-reps must be at least 1, got %d", c.reps)
	case c.duration <= 0 || c.seqDur <= 0 || c.contDur <= 0:
		return c, fmt.Errorf("-duration, -seq and -contention must be positive")
	case c.workers < 1:
		return c, fmt.Errorf("-workers must be at least 1, got %d", c.workers)
	case c.busy < 0:
		return c, fmt.Errorf("-busy must not be negative, got %d", c.busy)
	case c.procs < 2 || c.procWork < 1:
		return c, fmt.Errorf("-procs must be at least 2 and -proc-workers at least 1, got %d and %d", c.procs, c.procWork)
	case c.frozenN < 1:
		return c, fmt.Errorf("-frozen must be at least 1, got %d", c.frozenN)
	case c.holdMode != "sleep" && c.holdMode != "block":
		return c, fmt.Errorf("-hold-mode must be sleep or block, got %q", c.holdMode)
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "cluster" {
		return runClusterBench(args[1:], stdout, stderr) // cluster.go
	}
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// Other work on the machine, in the second before this program adds
	// its own: the label of the figures says so.
	loadStart := loadAvg()
	othersBefore, err := othersCPU(ctx, time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "bench: cannot measure the machine's load:", err)
		othersBefore = math.NaN()
	}
	spin, err := startSpinners(cfg.busy)
	if err != nil {
		return err
	}
	defer spin.stop()
	machineStart, _ := readMachineCPU()
	var childCPU time.Duration // CPU of the contention children

	nodes := make([]*redisproc.Process, 5)
	defer func() {
		for _, p := range nodes {
			if p != nil {
				p.Close()
			}
		}
	}()
	urls := make([]string, len(nodes))
	for i := range nodes {
		if nodes[i], err = redisproc.Start(ctx, redisproc.Config{}); err != nil {
			return fmt.Errorf("starting redis-server %d: %w", i+1, err)
		}
		urls[i] = nodes[i].URL()
	}

	var libs []lib
	for _, l := range libraries(cfg.tune, cfg.dlmOpts) {
		if cfg.libs == nil || cfg.libs[l.name] {
			libs = append(libs, l)
		}
	}
	r := &Report{
		Machine:    machine(),
		Command:    "cd bench && go run . " + shellJoin(args),
		Reps:       cfg.reps,
		Duration:   cfg.duration,
		Goroutines: cfg.goroutines,
		Workers:    cfg.workers,
		Hold:       cfg.hold,
		HoldMode:   cfg.holdMode,
		LoadStart:  loadStart,
		Busy:       cfg.busy,
		Others:     othersBefore,
		OthersRun:  math.NaN(),
		Procs:      cfg.procs,
		ProcWorker: cfg.procWork,
		S:          samples{},
	}
	for _, l := range libs {
		r.Libs = append(r.Libs, l.name)
	}
	named := func(names ...string) []lib {
		var ls []lib
		for _, n := range names {
			for _, l := range append(libs, dlmNoHandoff(cfg.dlmOpts), flockLib()) {
				if l.name == n && (cfg.libs == nil || cfg.libs[n]) {
					ls = append(ls, l)
				}
			}
		}
		return ls
	}
	contLibs := named(libDLM, libDLMNoHandoff, libDLMGoRedis, libRedsync, libRueidislock, libFlock)
	for _, l := range contLibs {
		r.ContLibs = append(r.ContLibs, l.name)
	}
	frozenLibs := named(libDLM, libDLMGoRedis, libRedsync)
	for _, l := range frozenLibs {
		r.FrozenLibs = append(r.FrozenLibs, l.name)
	}

	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	// rotate gives repetition rep's order of ls, so that no library always
	// runs first (or right after another).
	rotate := func(ls []lib, rep int) []lib {
		k := rep % len(ls)
		return append(append([]lib{}, ls[k:]...), ls[:k]...)
	}
	// keyOf names the keys of one library's run: libraries never share
	// keys, so that locks one leaves behind (a timed-out release waits for
	// the ttl) cannot fail another's attempts.
	keyOf := func(id string, l lib, what string) string {
		return id + ":" + strings.NewReplacer(" ", "", "(", "", ")", "", ",", "").Replace(l.name) + ":" + what
	}
	withLocker := func(l lib, f func(locker) error) error {
		lk, err := l.open(urls)
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		defer lk.close()
		return f(lk)
	}
	for rep := range cfg.reps {
		id := fmt.Sprintf("bench:%d:%d", time.Now().UnixNano(), rep)
		for _, g := range cfg.goroutines {
			if !cfg.only["tp"] {
				break
			}
			for _, l := range rotate(libs, rep) {
				if err := withLocker(l, func(lk locker) error {
					stopProfile, err := startProfile(cfg.profile, l.name, g, rep)
					if err != nil {
						return err
					}
					costBefore, err := readCost(ctx, nodes)
					if err != nil {
						return err
					}
					before, err := readCPU(ctx, nodes)
					if err != nil {
						return err
					}
					tp := lockload.Throughput(ctx, lk, keyOf(id, l, "tp:"+strconv.Itoa(g))+":", g, cfg.duration)
					after, err := readCPU(ctx, nodes)
					if err != nil {
						return err
					}
					costAfter, err := readCost(ctx, nodes)
					if err != nil {
						return err
					}
					if err := stopProfile(); err != nil {
						return err
					}
					r.costOf(l.name, g, tp.Pairs, costBefore, costAfter)
					v, failed, ferr := tp.PerSec, tp.Failed, tp.FirstErr
					r.S.add(v, "tp", l.name, g)
					r.S.add(float64(failed), "tpfail", l.name, g)
					cl, rd := math.NaN(), math.NaN()
					if tp.Pairs > 0 {
						cl = (after.client - before.client).Seconds() / float64(tp.Pairs)
						rd = (after.redis - before.redis).Seconds() / float64(tp.Pairs)
					}
					r.S.add(cl, "cpu-client", l.name, g)
					r.S.add(rd, "cpu-redis", l.name, g)
					logf("rep %d throughput %-28s g=%-4d %9.0f pairs/s (%d failed), CPU per pair %.1fµs client, %.1fµs redis",
						rep+1, l.name, g, v, failed, cl*1e6, rd*1e6)
					if ferr != nil {
						logf("    first failure: %v", ferr)
					}
					return ctx.Err()
				}); err != nil {
					return err
				}
			}
		}
		for _, l := range rotate(libs, rep) {
			if !cfg.only["seq"] {
				break
			}
			if err := withLocker(l, func(lk locker) error {
				s, err := lockload.Sequential(ctx, lk, keyOf(id, l, "seq"), cfg.seqDur)
				if err != nil {
					r.failure(rep, l.name, "sequential", err)
					logf("rep %d sequential %-28s FAILED: %v", rep+1, l.name, err)
					return ctx.Err()
				}
				r.S.add(s.PairP50.Seconds(), "seq-p50", l.name)
				r.S.add(s.PairP99.Seconds(), "seq-p99", l.name)
				r.S.add(s.AcquireP50.Seconds(), "seq-acq", l.name)
				r.S.add(s.AllocsPerPair, "allocs", l.name)
				logf("rep %d sequential %-28s p50 %v p99 %v acquire p50 %v, %.0f allocs/pair (%d pairs)",
					rep+1, l.name, s.PairP50, s.PairP99, s.AcquireP50, s.AllocsPerPair, s.Pairs)
				return nil
			}); err != nil {
				return err
			}
		}
		for _, l := range rotate(frozenLibs, rep) {
			if !cfg.only["frozen"] {
				break
			}
			if err := withLocker(l, func(lk locker) error {
				n := cfg.frozenN
				if l.name == "go-redsync" {
					n = min(n, 3) // it waits seconds for the frozen node every time
				}
				h, err := lockload.AcquireLatency(ctx, lk, keyOf(id, l, "healthy"), n)
				if err != nil {
					r.failure(rep, l.name, "one node frozen (healthy part)", err)
					logf("rep %d frozen node %-28s FAILED (healthy part): %v", rep+1, l.name, err)
					return ctx.Err()
				}
				nodes[4].Freeze()
				f, err := lockload.AcquireLatency(ctx, lk, keyOf(id, l, "frozen"), n)
				nodes[4].Thaw()
				if err != nil {
					r.failure(rep, l.name, "one node frozen", err)
					logf("rep %d frozen node %-28s FAILED: %v", rep+1, l.name, err)
					return ctx.Err()
				}
				r.S.add(h.Seconds(), "healthy", l.name)
				r.S.add(f.Seconds(), "frozen", l.name)
				logf("rep %d frozen node %-28s healthy acquire p50 %v, frozen %v", rep+1, l.name, h, f)
				return nil
			}); err != nil {
				return err
			}
		}
		for _, l := range rotate(contLibs, rep) {
			if !cfg.only["cont"] {
				break
			}
			if err := withLocker(l, func(lk locker) error {
				how := time.Sleep
				if cfg.holdMode == "block" {
					how = lockload.HoldBlocking
				}
				before, err := readCPU(ctx, nodes)
				if err != nil {
					return err
				}
				c := lockload.ContentionHeld(ctx, lk, keyOf(id, l, "cont"), cfg.workers, cfg.hold, cfg.contDur, how)
				after, err := readCPU(ctx, nodes)
				if err != nil {
					return err
				}
				n := c.PerSec * cfg.contDur.Seconds()
				cl, rd := (after.client-before.client).Seconds()/n, (after.redis-before.redis).Seconds()/n
				r.S.add(c.PerSec, "cont", l.name)
				r.S.add(c.Fairness, "fair", l.name)
				r.S.add(float64(c.Failed), "contfail", l.name)
				if n > 0 { // no critical section: no cost per one
					r.S.add(cl, "cont-cpu-client", l.name)
					r.S.add(rd, "cont-cpu-redis", l.name)
				}
				logf("rep %d contention %-28s %6.0f CS/s, busiest/least %.2f, %d gave up, CPU per CS %.0fµs client, %.0fµs redis",
					rep+1, l.name, c.PerSec, c.Fairness, c.Failed, cl*1e6, rd*1e6)
				return ctx.Err()
			}); err != nil {
				return err
			}
		}
		for _, l := range rotate(contLibs, rep) {
			if !cfg.only["mp"] {
				break
			}
			var before, after cpuTimes
			rs, cpu, err := runContProcs(ctx, contParams{
				Args: args, Lib: l.name, URLs: urls, Key: keyOf(id, l, "mp"),
				Workers: cfg.procWork, Hold: cfg.hold, HoldMode: "block", Dur: cfg.contDur,
			}, cfg.procs,
				func() (err error) { before, err = readCPU(ctx, nodes); return err },
				func() (err error) { after, err = readCPU(ctx, nodes); return err })
			childCPU += cpu
			if err != nil {
				return err
			}
			st := analyzeCont(rs, cfg.contDur)
			n := st.PerSec * cfg.contDur.Seconds()
			cl, rd := st.CPU.Seconds()/n, (after.redis-before.redis).Seconds()/n
			r.S.add(st.PerSec, "mp", l.name)
			r.S.add(st.ProcFairness, "mp-fair", l.name)
			r.S.add(st.WorkerFairness, "mp-wfair", l.name)
			r.S.add(float64(st.Failed), "mp-fail", l.name)
			if n > 0 { // no critical section: no cost per one
				r.S.add(cl, "mp-cpu-client", l.name)
				r.S.add(rd, "mp-cpu-redis", l.name)
				r.S.add(st.Attempts, "mp-attempts", l.name)
			}
			for _, q := range []struct {
				name string
				q    quantiles
			}{{"cross", st.Cross}, {"local", st.Local}, {"release", st.Release}, {"wake", st.Wake}, {"round", st.Round}} {
				if q.q.N > 0 {
					r.S.add(q.q.P50.Seconds(), "mp-"+q.name+"-p50", l.name)
					r.S.add(q.q.P99.Seconds(), "mp-"+q.name+"-p99", l.name)
				}
			}
			logf("rep %d across %d processes %-24s %6.0f CS/s, busiest/least process %.2f (worker %.2f), %d gave up, CPU per CS %.0fµs clients, %.0fµs redis",
				rep+1, cfg.procs, l.name, st.PerSec, st.ProcFairness, st.WorkerFairness, st.Failed, cl*1e6, rd*1e6)
			logf("    per process %v, %.1f critical sections in a row in one process", st.PerProc, st.Turn)
			r.S.add(st.Turn, "mp-turn", l.name)
			if st.HoldMean > 0 {
				r.S.add(st.HoldMean.Seconds(), "mp-hold", l.name)
				r.S.add(st.HoldShare, "mp-share-hold", l.name)
				r.S.add(st.LocalShare, "mp-share-local", l.name)
				r.S.add(st.CrossShare, "mp-share-cross", l.name)
			}
			logf("    hand-off across processes p50 %v p99 %v (%d), within one p50 %v p99 %v (%d); release p50 %v, unlock to winning attempt p50 %v p99 %v, attempt p50 %v p99 %v, %.1f attempts per CS",
				st.Cross.P50, st.Cross.P99, st.Cross.N, st.Local.P50, st.Local.P99, st.Local.N, st.Release.P50, st.Wake.P50, st.Wake.P99, st.Round.P50, st.Round.P99, st.Attempts)
		}
	}

	r.LoadEnd = loadAvg()
	if machineEnd, err := readMachineCPU(); err == nil && !machineStart.at.IsZero() {
		self, err := readCPU(ctx, nodes)
		if err == nil {
			ours := self.client + self.redis + childCPU + spin.cpu()
			r.OthersRun = machineEnd.othersSince(machineStart, ours)
		}
	}
	r.Markdown(stdout)
	if cfg.out != "" {
		f, err := os.Create(cfg.out)
		if err != nil {
			return err
		}
		r.Markdown(f)
		if err := f.Close(); err != nil {
			return err
		}
	}
	if cfg.plot != "" {
		f, err := os.Create(cfg.plot)
		if err != nil {
			return err
		}
		r.SVG(f)
		return f.Close()
	}
	return nil
}

// machine describes the machine: CPUs, CPU model, redis-server and Go
// versions.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	redisV := "unknown"
	if out, err := exec.Command(redisproc.Binary, "--version").Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if v, ok := strings.CutPrefix(f, "v="); ok {
				redisV = v
			}
		}
	}
	return fmt.Sprintf("%d CPUs (nproc), %s, redis-server %s, %s %s/%s",
		runtime.NumCPU(), model, redisV, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// shellJoin quotes the arguments that need it for a shell.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " ()'\"$\\;&|<>*?") && !strings.ContainsAny(a, "'") {
			q[i] = "'" + a + "'"
		}
	}
	return strings.Join(q, " ")
}
