package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// samples collects one number per repetition under a (workload, library,
// parameter) name.
type samples map[string][]float64

func sampleKey(parts ...any) string { return fmt.Sprint(parts...) }

func (s samples) add(v float64, parts ...any) {
	k := sampleKey(parts...)
	s[k] = append(s[k], v)
}

// med returns the median of the samples under a name (NaN when none).
func (s samples) med(parts ...any) float64 { return median(s[sampleKey(parts...)]) }

// Report is everything the program prints: the machine, the settings, and
// the medians of the repetitions.
type Report struct {
	Machine    string
	Command    string
	Reps       int
	Duration   time.Duration
	Goroutines []int
	Libs       []string // throughput and sequential columns
	ContLibs   []string // contention rows
	FrozenLibs []string
	Workers    int
	Hold       time.Duration
	HoldMode   string // sleep or block (-hold-mode); "" reads as sleep
	// LoadStart and LoadEnd are the 1-minute load averages when the run
	// started and ended ("" where unknown): above the CPU count, the
	// machine was loaded by other work, and the figures say so.
	LoadStart, LoadEnd string
	// Busy is -busy: how many spinning processes kept a core each busy
	// during the run.
	Busy int
	// Others is how many cores other processes kept busy in the second
	// before the run, OthersRun on average during it (the machine's busy
	// time less this program's, its children's and the nodes'); NaN where
	// unknown.
	Others, OthersRun float64
	// Procs and ProcWorker shape the contention across processes.
	Procs, ProcWorker int
	S                 samples
	// CostCmds are the commands the nodes ran in the throughput runs
	// (INFO commandstats), in the order first seen.
	CostCmds []string
	// Failures are the workloads that stopped at an error (Sequential and
	// AcquireLatency stop at the first), one line each.
	Failures []string
}

// failure records that a workload of a library stopped at err.
func (r *Report) failure(rep int, lib, workload string, err error) {
	r.Failures = append(r.Failures, fmt.Sprintf("repetition %d, %s, %s: %v", rep+1, lib, workload, err))
}

// ms formats seconds as milliseconds.
func ms(sec float64) string {
	if math.IsNaN(sec) {
		return "-"
	}
	return fmt.Sprintf("%.3f ms", sec*1e3)
}

func num(x float64, format string) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsInf(x, 1):
		return "inf"
	}
	return fmt.Sprintf(format, x)
}

// ratio is a/b, NaN when either is missing.
func ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

// target is one of the speed targets the report checks, measured.
type target struct {
	what     string
	measured float64
	want     float64
	atMost   bool // measured <= want is met; else measured >= want
}

func (t target) met() string {
	switch {
	case math.IsNaN(t.measured):
		return "not measured"
	case t.atMost && t.measured <= t.want, !t.atMost && t.measured >= t.want:
		return "met"
	}
	return "**missed**"
}

// targets computes the speed targets from the medians: dlm is the first
// library, go-redsync the one named so.
func (r *Report) targets() []target {
	dlm, rs := libDLM, libRedsync
	var ts []target
	for _, g := range []int{64, 256} {
		want := 5.0
		if g == 256 {
			want = 8
		}
		ts = append(ts, target{
			what:     fmt.Sprintf("throughput, %d goroutines, distinct keys: %s / go-redsync", g, dlm),
			measured: ratio(r.S.med("tp", dlm, g), r.S.med("tp", rs, g)),
			want:     want,
		})
	}
	ts = append(ts, target{
		what:     fmt.Sprintf("sequential pair p50: %s / go-redsync", dlm),
		measured: ratio(r.S.med("seq-p50", dlm), r.S.med("seq-p50", rs)),
		want:     0.8, atMost: true,
	})
	ts = append(ts, target{
		what:     fmt.Sprintf("acquire p50, one node frozen / healthy: %s", dlm),
		measured: ratio(r.S.med("frozen", dlm), r.S.med("healthy", dlm)),
		want:     1.5, atMost: true,
	})
	ts = append(ts, target{
		what:     fmt.Sprintf("contention, %d workers, one key, %v hold (%s), critical sections/s: %s / go-redsync", r.Workers, r.Hold, r.holdHow(), dlm),
		measured: ratio(r.S.med("cont", dlm), r.S.med("cont", rs)),
		want:     1.5,
	})
	ts = append(ts, target{
		what:     fmt.Sprintf("contention fairness, busiest / least busy worker: %s", dlm),
		measured: r.S.med("fair", dlm),
		want:     2, atMost: true,
	})
	ts = append(ts, target{
		what:     fmt.Sprintf("contention across %d processes x %d workers, %v blocking hold, critical sections/s: %s / go-redsync", r.Procs, r.ProcWorker, r.Hold, dlm),
		measured: ratio(r.S.med("mp", dlm), r.S.med("mp", rs)),
		want:     1.5,
	})
	ts = append(ts, target{
		what:     fmt.Sprintf("contention across processes, busiest / least busy process: %s", dlm),
		measured: r.S.med("mp-fair", dlm),
		want:     2, atMost: true,
	})
	// Each adapter against the minimal Redlock over go-redis
	// (go-redis' auto-pipelining), at 64 and 256 goroutines.
	for _, l := range []string{libDLM, libDLMGoRedis} {
		for _, g := range []int{64, 256} {
			ts = append(ts, target{
				what:     fmt.Sprintf("throughput, %d goroutines, distinct keys: %s / %s", g, l, libMinimalGo),
				measured: ratio(r.S.med("tp", l, g), r.S.med("tp", libMinimalGo, g)),
				want:     1.1,
			}, target{
				what: fmt.Sprintf("CPU per pair, client and nodes, %d goroutines: %s / %s", g, l, libMinimalGo),
				measured: ratio(r.S.med("cpu-client", l, g)+r.S.med("cpu-redis", l, g),
					r.S.med("cpu-client", libMinimalGo, g)+r.S.med("cpu-redis", libMinimalGo, g)),
				want: 1, atMost: true,
			})
		}
	}
	for _, l := range r.Libs {
		if !strings.HasPrefix(l, "dlm") {
			continue
		}
		failed, seen := 0.0, false
		for _, g := range r.Goroutines {
			for _, f := range r.S[sampleKey("tpfail", l, g)] {
				failed, seen = failed+f, true
			}
		}
		if !seen {
			failed = math.NaN()
		}
		ts = append(ts, target{
			what:     fmt.Sprintf("failed pairs, all throughput runs and repetitions together: %s", l),
			measured: failed,
			want:     0, atMost: true,
		})
	}
	return ts
}

// Markdown writes the report as Markdown tables.
func (r *Report) Markdown(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	rs := "go-redsync"
	p("Machine: %s.\n\n", r.Machine)
	p("Load: **%s**. %s\n\n", r.loadLabel(), r.loadDetail())
	p("Medians of %d repetitions, libraries alternating; %v per throughput run. Rerun:\n\n", r.Reps, r.Duration)
	p("    %s\n\n", r.Command)

	p("**Throughput, distinct keys** (acquire+release pairs per second, and the ratio to go-redsync; one attempt, no retry; 5 nodes, one for the libraries marked 1 node; in parentheses the median number of failed pairs of a run, when not 0)\n\n")
	r.goroutineTable(w, func(l string, g int) string {
		v := r.S.med("tp", l, g)
		cell := num(v, "%.0f")
		if l != rs {
			cell += ", " + num(ratio(v, r.S.med("tp", rs, g)), "%.1fx")
		}
		if f := r.S.med("tpfail", l, g); f > 0 {
			cell += fmt.Sprintf(" (%.0f failed)", f)
		}
		return cell
	})

	p("\n**Cost of a pair** (CPU time per acquire+release pair in the throughput runs, in µs: the whole client process (getrusage) / the redis-server nodes together (INFO cpu))\n\n")
	r.goroutineTable(w, func(l string, g int) string {
		return num(r.S.med("cpu-client", l, g)*1e6, "%.1f") + " / " + num(r.S.med("cpu-redis", l, g)*1e6, "%.1f")
	})

	r.costTable(w)

	p("\n**Sequential** (one goroutine, one key)\n\n")
	p("| library | pair p50 | pair p99 | acquire p50 | allocs per pair |\n|---|---:|---:|---:|---:|\n")
	for _, l := range r.Libs {
		p("| %s | %s | %s | %s | %s |\n", l, ms(r.S.med("seq-p50", l)), ms(r.S.med("seq-p99", l)),
			ms(r.S.med("seq-acq", l)), num(r.S.med("allocs", l), "%.0f"))
	}

	p("\n**One node frozen** (SIGSTOP; acquire latency, one goroutine)\n\n")
	p("| library | healthy acquire p50 | frozen acquire p50 | frozen / healthy |\n|---|---:|---:|---:|\n")
	for _, l := range r.FrozenLibs {
		h, f := r.S.med("healthy", l), r.S.med("frozen", l)
		p("| %s | %s | %s | %sx |\n", l, ms(h), ms(f), num(ratio(f, h), "%.2f"))
	}

	p("\n**Contention in one process** (%d workers, one key, %v hold by %s, each library's default retry; CPU per critical section in µs, client process / redis-server nodes)\n\n", r.Workers, r.Hold, r.holdHow())
	p("| library | critical sections/s | / go-redsync | busiest / least busy | gave up | CPU per critical section |\n|---|---:|---:|---:|---:|---:|\n")
	for _, l := range r.ContLibs {
		v := r.S.med("cont", l)
		p("| %s | %s | %s | %s | %s | %s / %s |\n", l, num(v, "%.0f"), num(ratio(v, r.S.med("cont", rs)), "%.2fx"),
			num(r.S.med("fair", l), "%.2f"), num(r.S.med("contfail", l), "%.0f"),
			num(r.S.med("cont-cpu-client", l)*1e6, "%.0f"), num(r.S.med("cont-cpu-redis", l)*1e6, "%.0f"))
	}

	p("\n**Contention across processes** (%d OS processes x %d workers, one key, %v hold by one blocking nanosleep, each library's default retry; fairness is the busiest process's critical sections over the least busy one's, and the same over all workers; CPU per critical section in µs, all client processes / redis-server nodes; hand-off: from the holder's Unlock call to the next holder's Lock returning, by the host's wall clock, which all processes on one host share)\n\n", r.Procs, r.ProcWorker, r.Hold)
	p("| library | critical sections/s | / go-redsync | busiest / least busy process | busiest / least busy worker | gave up | CPU per critical section | hand-off across processes p50 / p99 | within a process p50 / p99 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.ContLibs {
		v := r.S.med("mp", l)
		p("| %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s / %s |\n", l, num(v, "%.0f"), num(ratio(v, r.S.med("mp", rs)), "%.2fx"),
			num(r.S.med("mp-fair", l), "%.2f"), num(r.S.med("mp-wfair", l), "%.2f"), num(r.S.med("mp-fail", l), "%.0f"),
			num(r.S.med("mp-cpu-client", l)*1e6, "%.0f"), num(r.S.med("mp-cpu-redis", l)*1e6, "%.0f"),
			ms(r.S.med("mp-cross-p50", l)), ms(r.S.med("mp-cross-p99", l)), ms(r.S.med("mp-local-p50", l)), ms(r.S.med("mp-local-p99", l)))
	}
	p("\n**Where the time across processes goes** (the run's critical sections and the gaps between them: a hold's mean, from Lock returning to the Unlock call, which the blocking nanosleep makes longer than asked on a busy machine, for every library alike; and the shares of their sum spent holding, handing off within a process, and handing off across processes)\n\n")
	p("| library | hold, mean | holding | hand-offs within a process | hand-offs across processes |\n|---|---:|---:|---:|---:|\n")
	for _, l := range r.ContLibs {
		p("| %s | %s | %s | %s | %s |\n", l, ms(r.S.med("mp-hold", l)), num(100*r.S.med("mp-share-hold", l), "%.1f%%"),
			num(100*r.S.med("mp-share-local", l), "%.1f%%"), num(100*r.S.med("mp-share-cross", l), "%.1f%%"))
	}
	p("\n**Where a hand-off across processes goes** (dlm's clients, from their observers: the holder's Unlock call to its return; from the Unlock call to the start (T1) of the next holder's winning attempt, which covers the release reaching the nodes, the announcement, the waiter's wake-up and jitter, or its timed retry; the winning attempt itself; acquisition attempts per critical section, a lock handed over within a process not counted (it asks no node when kept); and critical sections in a row in one process)\n\n")
	p("| library | Unlock p50 / p99 | Unlock to winning attempt p50 / p99 | winning attempt p50 / p99 | attempts per critical section | in a row in one process |\n|---|---:|---:|---:|---:|---:|\n")
	for _, l := range r.ContLibs {
		if math.IsNaN(r.S.med("mp-wake-p50", l)) {
			continue
		}
		p("| %s | %s / %s | %s / %s | %s / %s | %s | %s |\n", l, ms(r.S.med("mp-release-p50", l)), ms(r.S.med("mp-release-p99", l)),
			ms(r.S.med("mp-wake-p50", l)), ms(r.S.med("mp-wake-p99", l)), ms(r.S.med("mp-round-p50", l)), ms(r.S.med("mp-round-p99", l)),
			num(r.S.med("mp-attempts", l), "%.2f"), num(r.S.med("mp-turn", l), "%.1f"))
	}

	if len(r.Failures) > 0 {
		p("\n**Workloads that stopped at a failure** (their figures are missing from the tables above, or are the other repetitions' only)\n\n")
		for _, f := range r.Failures {
			p("- %s\n", f)
		}
	}

	p("\n**Targets**\n\n| target | measured | wanted | |\n|---|---:|---:|---|\n")
	for _, t := range r.targets() {
		op := ">="
		if t.atMost {
			op = "<="
		}
		p("| %s | %s | %s %g | %s |\n", t.what, num(t.measured, "%.2f"), op, t.want, t.met())
	}
}

// goroutineTable writes a table with a row per number of goroutines and
// a column per library, whose cells cell gives.
func (r *Report) goroutineTable(w io.Writer, cell func(lib string, goroutines int) string) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("| goroutines |")
	for _, l := range r.Libs {
		p(" %s |", l)
	}
	p("\n|---:|")
	for range r.Libs {
		p("---:|")
	}
	p("\n")
	for _, g := range r.Goroutines {
		p("| %d |", g)
		for _, l := range r.Libs {
			p(" %s |", cell(l, g))
		}
		p("\n")
	}
}

// costTable writes where the CPU of a pair goes in the throughput runs.
func (r *Report) costTable(w io.Writer) {
	if len(r.CostCmds) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\n**Where the CPU of a pair goes** (the throughput runs, per acquire+release pair: CPU in µs of the client process (getrusage) and of the 5 nodes together (INFO cpu); the commands the nodes ran, with the µs each took on average (INFO commandstats: the commands a script runs count too, and the script's µs include theirs); the nodes' reads and writes of client sockets (INFO stats total_reads_processed / total_writes_processed) and their read and write system calls (/proc/PID/io syscr + syscw); bytes the nodes received / sent; the client's read and write system calls (/proc/self/io) and context switches (getrusage))\n\n")
	p("| library | goroutines | pairs/s | CPU client / nodes | commands per pair (µs each) | node reads / writes | node syscalls | bytes in / out | client syscalls | client context switches |\n|---|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, g := range r.Goroutines {
		for _, l := range r.Libs {
			if math.IsNaN(r.S.med("cost-node-reads", l, g)) {
				continue
			}
			p("| %s | %d | %s | %s / %s | %s | %s / %s | %s | %s / %s | %s | %s |\n", l, g, num(r.S.med("tp", l, g), "%.0f"),
				num(r.S.med("cpu-client", l, g)*1e6, "%.1f"), num(r.S.med("cpu-redis", l, g)*1e6, "%.1f"),
				r.costCommands(l, g),
				num(r.S.med("cost-node-reads", l, g), "%.2f"), num(r.S.med("cost-node-writes", l, g), "%.2f"),
				num(r.S.med("cost-node-sys", l, g), "%.2f"),
				num(r.S.med("cost-net-in", l, g), "%.0f"), num(r.S.med("cost-net-out", l, g), "%.0f"),
				num(r.S.med("cost-client-sys", l, g), "%.2f"), num(r.S.med("cost-client-ctx", l, g), "%.2f"))
		}
	}
}

// SVG writes a line plot of throughput (pairs/s) against goroutines, one
// line per library, goroutines on a log2 axis.
func (r *Report) SVG(w io.Writer) {
	const W, H, left, right, top, bottom = 720, 420, 80, 200, 40, 50
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	gs := r.Goroutines
	if len(gs) == 0 {
		return
	}
	lx0, lx1 := math.Log2(float64(gs[0])), math.Log2(float64(gs[len(gs)-1]))
	if lx1 == lx0 {
		lx1 = lx0 + 1
	}
	ymax := 0.0
	for _, l := range r.Libs {
		for _, g := range gs {
			if v := r.S.med("tp", l, g); !math.IsNaN(v) {
				ymax = max(ymax, v)
			}
		}
	}
	ymax = niceCeil(ymax)
	x := func(g int) float64 { return left + (math.Log2(float64(g))-lx0)/(lx1-lx0)*pw }
	y := func(v float64) float64 { return top + ph - v/ymax*ph }
	colors := []string{"#d62728", "#ff7f0e", "#1f77b4", "#7f7f7f", "#2ca02c", "#9467bd"}

	var b strings.Builder
	f := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	f(`<text x="%d" y="20" font-size="14">Acquire+release pairs/s, distinct keys, 5 redis-server nodes</text>`+"\n", left)
	for i := 0; i <= 5; i++ {
		v := ymax * float64(i) / 5
		f(`<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, left+pw, y(v), y(v))
		f(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, si(v))
	}
	for _, g := range gs {
		f(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#eee"/>`+"\n", x(g), x(g), top, top+ph)
		f(`<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x(g), top+ph+16, g)
	}
	f(`<text x="%.1f" y="%d" text-anchor="middle">goroutines</text>`+"\n", left+pw/2, H-10)
	f(`<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	for i, l := range r.Libs {
		c := colors[i%len(colors)]
		var pts []string
		for _, g := range gs {
			if v := r.S.med("tp", l, g); !math.IsNaN(v) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(g), y(v)))
				f(`<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(g), y(v), c)
			}
		}
		f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), c)
		ly := top + 10 + 20*i
		f(`<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", left+pw+12, left+pw+32, ly, ly, c)
		f(`<text x="%.1f" y="%d">%s</text>`+"\n", left+pw+38, ly+4, xmlEscape(l))
	}
	f("</svg>\n")
	_, _ = io.WriteString(w, b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// si formats v with a k suffix for thousands.
func si(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%gk", math.Round(v/100)/10)
	}
	return fmt.Sprintf("%g", v)
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// loadLabel says whether the machine was loaded: by -busy, or by other
// work, which kept a quarter of a core or more busy before or during the
// run.
func (r *Report) loadLabel() string {
	others := math.NaN() // the larger of the two known ones
	for _, o := range []float64{r.Others, r.OthersRun} {
		if !math.IsNaN(o) && (math.IsNaN(others) || o > others) {
			others = o
		}
	}
	switch {
	case r.Busy > 0 && others >= 0.25:
		return fmt.Sprintf("LOADED (-busy %d, and other work)", r.Busy)
	case r.Busy > 0:
		return fmt.Sprintf("LOADED (-busy %d)", r.Busy)
	case others >= 0.25:
		return "LOADED by other work"
	case math.IsNaN(others):
		return "load unknown"
	}
	return "quiet machine"
}

// loadDetail says what the label rests on.
func (r *Report) loadDetail() string {
	var b strings.Builder
	if r.Busy > 0 {
		fmt.Fprintf(&b, "%d spinning processes kept %d of the %d CPUs busy throughout (-busy %d). ", r.Busy, r.Busy, runtime.NumCPU(), r.Busy)
	}
	fmt.Fprintf(&b, "Other processes kept %s cores busy in the second before the run and %s on average during it",
		num(r.Others, "%.2f"), num(r.OthersRun, "%.2f"))
	if r.LoadStart != "" {
		fmt.Fprintf(&b, "; load average (1 min) %s at the start, %s at the end", r.LoadStart, r.LoadEnd)
	}
	b.WriteString(".")
	return b.String()
}

// holdHow names how the contention workers held the lock.
func (r *Report) holdHow() string {
	if r.HoldMode == "block" {
		return "blocking nanosleep"
	}
	return "time.Sleep"
}
