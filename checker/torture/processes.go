package torture

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"dlm/checker"
)

// FaultKillHolder is the fault of the process-holders scenario: SIGKILL of
// the dlm lock process of a client whose command is in its critical
// section. The command, and whatever it started, must be gone before the
// lock can expire (dlm lock's guard kills its process group).
const FaultKillHolder = "kill-holder"

// WithDLM names the dlm executable that the process-holders scenario runs
// as its clients (dlm torture passes its own). Without it that scenario
// fails with ErrEnvironment.
func WithDLM(path string) Option { return func(o *runOptions) { o.dlm = path } }

// runProcessHolders: the clients are separate OS processes, `dlm lock`
// running a command whose critical section logs its start and end; a
// seeded schedule SIGKILLs the dlm process of a client in its section. The
// log becomes the history: a section is believed held from its start to
// its end, or, when its dlm was killed, until its command was seen gone.
func runProcessHolders(ctx context.Context, e *env) error {
	if e.dlm == "" {
		return fmt.Errorf("%w: the process-holders scenario runs dlm lock processes; run it through dlm torture", ErrEnvironment)
	}
	dir, err := os.MkdirTemp("", "dlm-torture-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logPath := filepath.Join(dir, "sections")
	ph := &processHolders{e: e, log: logPath, running: map[string]holder{}, gone: map[string]int64{}}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Duration)
	defer cancel()
	frng := rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64()))
	var wg sync.WaitGroup
	for i := 0; i < e.cfg.Clients; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); ph.client(rctx, fmt.Sprintf("p%d", i)) }()
	}
	faults := make(chan error, 1)
	go func() { faults <- ph.killer(rctx, frng) }()
	wg.Wait()
	ferr := <-faults
	if err := ph.record(); err != nil {
		return err
	}
	return ferr
}

// processHolders is one run of the process-holders scenario.
type processHolders struct {
	e   *env
	log string

	mu      sync.Mutex
	running map[string]holder // client -> its dlm lock process now
	gone    map[string]int64  // killed section -> run time its command was seen gone
}

// holder is the dlm lock process a client runs now, and the id its
// section logs.
type holder struct {
	cmd *exec.Cmd
	id  string
}

// client runs dlm lock again and again until ctx ends.
func (ph *processHolders) client(ctx context.Context, name string) {
	cfg := ph.e.cfg
	// Longer than the ttl: dlm lock extends the lock while its command
	// works, and a command that outlived a killed dlm would still be
	// working when the lock expires and the next holder starts.
	work := cfg.TTL + cfg.TTL/2
	for n := 0; ctx.Err() == nil; n++ {
		wait := time.Until(deadlineOf(ctx))
		if wait <= 0 {
			return
		}
		id := name + "-" + strconv.Itoa(n)
		// The command's processes carry the section's mark (sectionMark):
		// the shell as its last argument, what it starts in its
		// environment. That is how the killer finds them: a pid the
		// command logged would be its pid in the PID namespace dlm lock
		// may run it in, which means nothing here.
		script := `export ` + sectionEnv + `="$2"; echo "start ` + id + ` $(date +%s%N)" >> "$1"; sleep ` + seconds(work) + `; echo "end ` + id + ` $(date +%s%N)" >> "$1"`
		cmd := exec.Command(ph.e.dlm, "lock", "--nodes", strings.Join(ph.e.cl.urls(0), ","), "--ttl", cfg.TTL.String(),
			"--node-timeout", cfg.NodeTimeout.String(), "--wait", wait.Round(time.Millisecond).String(), "--adapter", cfg.adapter(),
			"r", "--", "sh", "-c", script, "sh", ph.log, ph.sectionMark(id))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			ph.e.log("%s: start dlm lock: %v", name, err)
			return
		}
		ph.mu.Lock()
		ph.running[name] = holder{cmd: cmd, id: id}
		ph.mu.Unlock()
		_ = cmd.Wait() // exit 75 (not acquired in time) and 137 (killed) are part of the run
		ph.mu.Lock()
		delete(ph.running, name)
		ph.mu.Unlock()
	}
}

// killer SIGKILLs, at seeded intervals, the dlm process of a client whose
// command is in its section, and records when that command is gone.
func (ph *processHolders) killer(ctx context.Context, rng *rand.Rand) error {
	ttl := ph.e.cfg.TTL
	for {
		sleep(ctx, ttl/2+time.Duration(rng.Int64N(int64(ttl))))
		if ctx.Err() != nil {
			return nil
		}
		open := ph.openSections()
		if len(open) == 0 {
			continue
		}
		s := open[rng.IntN(len(open))]
		ph.mu.Lock()
		h := ph.running[s.client]
		ph.mu.Unlock()
		if h.cmd == nil || h.id != s.id {
			continue // that section's dlm has already ended
		}
		cmd := h.cmd
		mark := ph.sectionMark(s.id)
		procs := markedProcesses(mark)
		end := ph.e.rec.fault(FaultKillHolder, s.client, fmt.Sprintf("SIGKILL to dlm lock pid %d while section %s runs (command pids %v)", cmd.Process.Pid, s.id, procs))
		_ = cmd.Process.Kill()
		deadline := time.Now().Add(2 * ttl)
		for {
			// The processes seen run until every one is gone; then a
			// look at every process confirms that none carries the mark
			// (one may have started since).
			procs = stillMarked(procs, mark)
			if len(procs) == 0 {
				if procs = markedProcesses(mark); len(procs) == 0 {
					break
				}
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond) // polling interval, bounded by the deadline
		}
		ph.mu.Lock()
		if _, seen := ph.gone[s.id]; !seen && len(procs) == 0 {
			ph.gone[s.id] = ph.e.rec.now()
		}
		ph.mu.Unlock()
		end()
	}
}

// sectionEnv is the environment variable that carries a section's mark to
// the processes its command starts.
const sectionEnv = "DLM_TORTURE_SECTION"

// sectionMark is what marks the processes of section id's command: the
// run's log and the id, unique on this machine.
func (ph *processHolders) sectionMark(id string) string { return ph.log + "#" + id }

// markedProcesses returns the running processes (pids as this process
// sees them) that carry mark: as their last argument a shell's, or in
// their environment. dlm lock and its guard, which carry the command's
// arguments too, are not shells.
func markedProcesses(mark string) []int {
	var pids []int
	dir, _ := os.ReadDir("/proc")
	for _, e := range dir {
		if pid, err := strconv.Atoi(e.Name()); err == nil && carries(pid, mark) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stillMarked returns those of pids that run and carry mark (a pid reused
// by another process does not).
func stillMarked(pids []int, mark string) []int {
	var out []int
	for _, p := range pids {
		if carries(p, mark) {
			out = append(out, p)
		}
	}
	return out
}

// carries reports whether pid runs and carries mark (markedProcesses).
func carries(pid int, mark string) bool {
	if !processAlive(pid) {
		return false
	}
	p := "/proc/" + strconv.Itoa(pid) + "/"
	if b, err := os.ReadFile(p + "cmdline"); err == nil {
		args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if len(args) > 1 && args[0] == "sh" && args[len(args)-1] == mark {
			return true
		}
	}
	env, err := os.ReadFile(p + "environ")
	return err == nil && strings.Contains("\x00"+string(env), "\x00"+sectionEnv+"="+mark+"\x00")
}

// section is one critical section read from the log.
type section struct {
	id, client string
	start, end int64 // wall clock, ns; end 0 while open
}

// readSections parses the log.
func (ph *processHolders) readSections() ([]*section, error) {
	f, err := os.Open(ph.log)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byID := map[string]*section{}
	var out []*section
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var what, id string
		var ns int64
		if _, err := fmt.Sscan(sc.Text(), &what, &id, &ns); err != nil {
			continue // a line being written
		}
		s := byID[id]
		if s == nil {
			client, _, _ := strings.Cut(id, "-")
			s = &section{id: id, client: client}
			byID[id] = s
			out = append(out, s)
		}
		if what == "start" {
			s.start = ns
		} else {
			s.end = ns
		}
	}
	return out, sc.Err()
}

// openSections returns the sections that started and have not ended.
func (ph *processHolders) openSections() []*section {
	all, _ := ph.readSections()
	var open []*section
	for _, s := range all {
		if s.start != 0 && s.end == 0 {
			open = append(open, s)
		}
	}
	return open
}

// record turns the log into acquisitions of the history: held from the
// section's start to its end, or to when its command was seen gone (or,
// never seen gone, to the end of the run: the worst case).
func (ph *processHolders) record() error {
	all, err := ph.readSections()
	if err != nil {
		return err
	}
	rec := ph.e.rec
	wall := func(ns int64) int64 { return ns - rec.start.UnixNano() }
	now := rec.now()
	ph.mu.Lock()
	defer ph.mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, s := range all {
		if s.start == 0 {
			continue
		}
		from := max(wall(s.start), 0)
		to := now
		switch g, killed := ph.gone[s.id]; {
		case s.end != 0:
			to = wall(s.end)
		case killed:
			to = g
		}
		rec.ops = append(rec.ops, checker.Op{ID: len(rec.ops) + 1, Client: s.client, Resource: "r", Kind: checker.Acquire, Lock: s.id,
			Start: from, End: from, OK: true, TTL: int64(ph.e.cfg.TTL), Until: max(to, from)})
	}
	return nil
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// deadlineOf is ctx's deadline (the run's end).
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// seconds formats d for sleep(1).
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
