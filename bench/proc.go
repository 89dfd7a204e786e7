package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"dlm/lockload"
	"dlm/redlock"
)

// The program runs copies of itself as child processes, told apart by the
// childEnv environment variable: spinners that keep a core busy (-busy),
// and the lock clients of the contention across processes (-only mp).
// A child exits when its standard input closes, so that none outlives the
// parent, however the parent ends.
const (
	childEnv   = "DLM_BENCH_CHILD"   // "spin" or "cont"
	paramsEnv  = "DLM_BENCH_PARAMS"  // a cont child's contParams, as JSON
	profileEnv = "DLM_BENCH_PROFILE" // a directory: each cont child writes its CPU profile there
	childSpin  = "spin"
	childCont  = "cont"
	readyLine  = "ready"
	maxResultB = 64 << 20
)

// runChild runs the child role named by childEnv; it reports whether the
// process was a child.
func runChild(stdin io.Reader, stdout io.Writer) (bool, error) {
	switch role := os.Getenv(childEnv); role {
	case "":
		return false, nil
	case childSpin:
		spin(stdin)
		return true, nil
	case childCont:
		var p contParams
		if err := json.Unmarshal([]byte(os.Getenv(paramsEnv)), &p); err != nil {
			return true, fmt.Errorf("contention child: %s: %w", paramsEnv, err)
		}
		return true, contChild(p, stdin, stdout)
	default:
		return true, fmt.Errorf("%s=%q: expected %q or %q", childEnv, role, childSpin, childCont)
	}
}

// spin keeps one core busy until stdin closes.
func spin(stdin io.Reader) {
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(stop)
	}()
	for x := uint64(1); ; x = x*6364136223846793005 + 1442695040888963407 {
		if x&0xfffff == 0 {
			select {
			case <-stop:
				return
			default:
			}
		}
	}
}

// child is one running copy of this program.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startChild starts a copy of this program in role, with params (JSON, or
// nil) and its stdout piped when read is set.
func startChild(role string, params any, read bool) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to run it as a %s child: %w", role, err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, paramsEnv+"="+string(b))
	}
	cmd.Stderr = os.Stderr
	c := &child{cmd: cmd}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if read {
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		c.out = bufio.NewReaderSize(out, 1<<16)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a %s child: %w", role, err)
	}
	return c, nil
}

// stop closes the child's stdin, which ends it, kills it if it is still
// there, and waits for it.
func (c *child) stop() {
	_ = c.stdin.Close()
	if c.out == nil { // a spinner: nothing to wait for
		_ = c.cmd.Process.Kill()
	}
	_ = c.cmd.Wait()
}

// cpu is the CPU time the child used, once it was waited for.
func (c *child) cpu() time.Duration {
	if c.cmd.ProcessState == nil {
		return 0
	}
	return c.cmd.ProcessState.UserTime() + c.cmd.ProcessState.SystemTime()
}

// spinners are the -busy processes.
type spinners []*child

// startSpinners starts n processes that each keep a core busy.
func startSpinners(n int) (spinners, error) {
	var s spinners
	for range n {
		c, err := startChild(childSpin, nil, false)
		if err != nil {
			s.stop()
			return nil, err
		}
		s = append(s, c)
	}
	return s, nil
}

// cpu is the CPU time the running spinners used so far.
func (s spinners) cpu() time.Duration {
	var d time.Duration
	for _, c := range s {
		d += procCPU(c.cmd.Process.Pid)
	}
	return d
}

func (s spinners) stop() {
	for _, c := range s {
		c.stop()
	}
}

// contParams is what a contention child is told.
type contParams struct {
	Args     []string // the parent's flags, for the libraries' settings
	Lib      string
	URLs     []string
	Key      string
	Workers  int
	Hold     time.Duration
	HoldMode string
	Dur      time.Duration
}

// csRecord is one critical section, by the host's wall clock (Unix
// nanoseconds): CLOCK_REALTIME, the one clock that the processes on one
// host share.
type csRecord struct {
	Worker   int   `json:"w"`
	Grant    int64 `json:"g"` // Lock returned
	Unlock   int64 `json:"u"` // Unlock called
	Unlocked int64 `json:"r"` // Unlock returned
}

// attemptRecord is one acquisition attempt of a dlm client, from its
// observer: At is when the observer heard of it (just before Lock returns
// for a granted one), Elapsed how long the attempt took (T1 to decision).
type attemptRecord struct {
	At      int64         `json:"a"`
	Elapsed time.Duration `json:"e"`
	Granted bool          `json:"ok"`
	Handed  bool          `json:"h,omitempty"`
}

// contChildResult is what a contention child reports.
type contChildResult struct {
	PID      int             `json:"pid"`
	Counts   []int64         `json:"counts"`
	Failed   int64           `json:"failed"`
	CS       []csRecord      `json:"cs"`
	Attempts []attemptRecord `json:"attempts"`
	// CPU is the process's CPU time during the run (getrusage), without
	// its start, warm-up and exit.
	CPU time.Duration `json:"cpu"`
}

// attemptLog is a redlock.Observer that records attempts.
type attemptLog struct {
	mu sync.Mutex
	as []attemptRecord
}

func (a *attemptLog) Attempt(e redlock.AttemptEvent) {
	r := attemptRecord{At: time.Now().UnixNano(), Elapsed: e.Elapsed, Granted: e.Outcome == redlock.AttemptAcquired, Handed: e.Handed}
	a.mu.Lock()
	a.as = append(a.as, r)
	a.mu.Unlock()
}
func (a *attemptLog) Extension(redlock.ExtensionEvent) {}
func (a *attemptLog) End(redlock.EndEvent)             {}

// runEnded reports whether a Lock call of a contention worker failed
// because the run ended (its context's deadline), not because the library
// gave up: ctx ended, or the error says its deadline passed, which a
// loaded machine reports before the context's timer has run (then
// ctx.Err() is still nil).
func runEnded(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)
}

// contChild is one process of the contention across processes: it opens
// its library's client, warms it up, says ready, waits for the start time
// (Unix nanoseconds, one line on stdin), runs its workers on the key until
// the start time + Dur, and writes its contChildResult as JSON.
func contChild(p contParams, stdin io.Reader, stdout io.Writer) error {
	cfg, err := parseFlags(p.Args, io.Discard)
	if err != nil {
		return err
	}
	log := &attemptLog{}
	opts := append(cfg.dlmOpts, redlock.WithObserver(log))
	var l lib
	for _, c := range append(libraries(cfg.tune, opts), dlmNoHandoff(opts), flockLib()) {
		if c.name == p.Lib {
			l = c
		}
	}
	if l.open == nil {
		return fmt.Errorf("contention child: no library %q", p.Lib)
	}
	lk, err := l.open(p.URLs)
	if err != nil {
		return fmt.Errorf("contention child: %s: %w", p.Lib, err)
	}
	defer lk.close()
	ctx := context.Background()
	warm := p.Key + ":warm:" + strconv.Itoa(os.Getpid())
	for range 5 {
		if rel, err := lk.TryLock(ctx, warm); err == nil {
			_ = rel(ctx)
		}
	}
	log.mu.Lock()
	log.as = log.as[:0]
	log.mu.Unlock()
	if _, err := fmt.Fprintln(stdout, readyLine); err != nil {
		return err
	}
	in := bufio.NewReader(stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		return fmt.Errorf("contention child: reading the start time: %w", err)
	}
	startNS, err := strconv.ParseInt(line[:len(line)-1], 10, 64)
	if err != nil {
		return fmt.Errorf("contention child: start time %q: %w", line, err)
	}
	start := time.Unix(0, startNS)
	time.Sleep(time.Until(start))
	if dir := os.Getenv(profileEnv); dir != "" {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cont-%d.pprof", os.Getpid())))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithDeadline(ctx, start.Add(p.Dur))
	defer cancel()
	hold := time.Sleep
	if p.HoldMode == "block" {
		hold = lockload.HoldBlocking
	}
	res := contChildResult{PID: os.Getpid(), Counts: make([]int64, p.Workers)}
	cpu0, err := selfCPU()
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range p.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []csRecord
			var failed int64
			for ctx.Err() == nil {
				rel, err := lk.Lock(ctx, p.Key)
				if err != nil {
					if runEnded(ctx, err) {
						break
					}
					failed++
					continue
				}
				r := csRecord{Worker: w, Grant: time.Now().UnixNano()}
				hold(p.Hold)
				done := ctx.Err() == nil
				r.Unlock = time.Now().UnixNano()
				_ = rel(context.Background())
				r.Unlocked = time.Now().UnixNano()
				mine = append(mine, r)
				if done {
					res.Counts[w]++
				}
			}
			mu.Lock()
			res.CS = append(res.CS, mine...)
			res.Failed += failed
			mu.Unlock()
		}()
	}
	wg.Wait()
	cpu1, err := selfCPU()
	if err != nil {
		return err
	}
	res.CPU = cpu1 - cpu0
	log.mu.Lock()
	res.Attempts = log.as
	log.mu.Unlock()
	return json.NewEncoder(stdout).Encode(res)
}

// runContProcs runs the contention across processes for one library: procs
// children with workers each, started together, and returns their results
// and the CPU time the children used in all (start and exit included).
// atStart runs once every child is ready, before they start; atEnd once
// they all reported, before they exit.
func runContProcs(ctx context.Context, p contParams, procs int, atStart, atEnd func() error) ([]contChildResult, time.Duration, error) {
	var cs []*child
	defer func() {
		for _, c := range cs {
			c.stop()
		}
	}()
	for range procs {
		c, err := startChild(childCont, p, true)
		if err != nil {
			return nil, 0, err
		}
		cs = append(cs, c)
	}
	for i, c := range cs {
		line, err := c.out.ReadString('\n')
		if err != nil || line != readyLine+"\n" {
			return nil, 0, fmt.Errorf("contention child %d of %s did not get ready: %q %v", i+1, p.Lib, line, err)
		}
	}
	if err := atStart(); err != nil {
		return nil, 0, err
	}
	start := time.Now().Add(100 * time.Millisecond)
	for _, c := range cs {
		if _, err := fmt.Fprintf(c.stdin, "%d\n", start.UnixNano()); err != nil {
			return nil, 0, err
		}
	}
	var rs []contChildResult
	var errs []error
	for i, c := range cs {
		var r contChildResult
		if err := json.NewDecoder(io.LimitReader(c.out, maxResultB)).Decode(&r); err != nil {
			errs = append(errs, fmt.Errorf("contention child %d of %s: %w", i+1, p.Lib, err))
			continue
		}
		rs = append(rs, r)
	}
	if err := atEnd(); err != nil {
		errs = append(errs, err)
	}
	var cpu time.Duration
	for _, c := range cs {
		c.stop()
		cpu += c.cpu()
	}
	cs = nil
	if ctx.Err() != nil {
		return nil, 0, ctx.Err()
	}
	return rs, cpu, errors.Join(errs...)
}
