package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"dlm/redlock/redisproc"
)

// costSnap is a reading of the counters that say where the CPU of a pair
// goes, on the client and on the nodes: taken before and after a
// throughput run, their difference divided by the run's pairs is the cost
// of one pair (costOf).
type costSnap struct {
	// The client process: CPU (getrusage), read and write system calls
	// (/proc/self/io syscr, syscw: read(2), write(2) and their vector
	// forms, which is how Go's netpoller moves a socket's bytes), and
	// context switches (getrusage: voluntary + involuntary).
	clientCPU            time.Duration
	clientRead, clientWr int64
	clientCtx            int64
	// The nodes together: CPU (INFO cpu), read and write system calls
	// (/proc/PID/io of each redis-server), the reads and writes of client
	// sockets (INFO stats total_reads_processed, total_writes_processed),
	// bytes received and sent (total_net_input_bytes, _output_bytes), and
	// per command its calls and the µs spent in it (INFO commandstats;
	// a script's commands count there too, and the script's time
	// includes theirs).
	nodeCPU          time.Duration
	nodeRead, nodeWr int64
	reads, writes    int64
	netIn, netOut    int64
	calls, usec      map[string]int64
}

// readCost reads the counters of the client process and of every node.
// What cannot be read (no /proc) stays 0.
func readCost(ctx context.Context, nodes []*redisproc.Process) (costSnap, error) {
	s := costSnap{calls: map[string]int64{}, usec: map[string]int64{}}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return s, fmt.Errorf("getrusage: %w", err)
	}
	s.clientCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	s.clientCtx = ru.Nvcsw + ru.Nivcsw
	s.clientRead, s.clientWr = procIO("self")
	for _, p := range nodes {
		info, err := p.Client().Info(ctx, "server", "cpu", "stats", "commandstats").Result()
		if err != nil {
			return s, fmt.Errorf("INFO of %s: %w", p.Addr(), err)
		}
		if err := s.addInfo(info); err != nil {
			return s, fmt.Errorf("INFO of %s: %w", p.Addr(), err)
		}
	}
	return s, nil
}

// addInfo adds one node's INFO reply to s.
func (s *costSnap) addInfo(info string) error {
	cpu, err := redisCPU(info)
	if err != nil {
		return err
	}
	s.nodeCPU += cpu
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			calls, usec := commandStat(v)
			s.calls[name] += calls
			s.usec[name] += usec
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "process_id":
			r, w := procIO(v)
			s.nodeRead += r
			s.nodeWr += w
		case "total_reads_processed":
			s.reads += n
		case "total_writes_processed":
			s.writes += n
		case "total_net_input_bytes":
			s.netIn += n
		case "total_net_output_bytes":
			s.netOut += n
		}
	}
	return nil
}

// commandStat parses the value of a cmdstat_ line of INFO commandstats:
// calls=N,usec=N,...
func commandStat(v string) (calls, usec int64) {
	for _, f := range strings.Split(v, ",") {
		k, x, _ := strings.Cut(f, "=")
		switch k {
		case "calls":
			calls, _ = strconv.ParseInt(x, 10, 64)
		case "usec":
			usec, _ = strconv.ParseInt(x, 10, 64)
		}
	}
	return calls, usec
}

// procIO returns the read and write system calls of process pid ("self"
// for this one) from /proc/PID/io, 0 and 0 when it cannot be read.
func procIO(pid string) (reads, writes int64) {
	b, err := os.ReadFile("/proc/" + pid + "/io")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// costOf adds to r's samples the cost of one pair of a throughput run of
// lib at g goroutines, from the counters before and after it.
func (r *Report) costOf(lib string, g int, pairs int64, before, after costSnap) {
	if pairs <= 0 {
		return
	}
	n := float64(pairs)
	per := func(a, b int64) float64 { return float64(a-b) / n }
	r.S.add(per(after.clientRead+after.clientWr, before.clientRead+before.clientWr), "cost-client-sys", lib, g)
	r.S.add(per(after.clientCtx, before.clientCtx), "cost-client-ctx", lib, g)
	r.S.add(per(after.nodeRead+after.nodeWr, before.nodeRead+before.nodeWr), "cost-node-sys", lib, g)
	r.S.add(per(after.reads, before.reads), "cost-node-reads", lib, g)
	r.S.add(per(after.writes, before.writes), "cost-node-writes", lib, g)
	r.S.add(per(after.netIn, before.netIn), "cost-net-in", lib, g)
	r.S.add(per(after.netOut, before.netOut), "cost-net-out", lib, g)
	for name, c := range after.calls {
		if name == "info" { // the bench's own readings
			continue
		}
		if d := c - before.calls[name]; d > 0 {
			r.S.add(per(c, before.calls[name]), "cost-calls", lib, g, name)
			r.S.add(float64(after.usec[name]-before.usec[name])/float64(d), "cost-usec", lib, g, name)
			if !slices.Contains(r.CostCmds, name) {
				r.CostCmds = append(r.CostCmds, name)
			}
		}
	}
}

// costCommands formats the commands the nodes ran per pair of lib at g
// goroutines, with the µs each took on average: "set 5.0 (1.2), ...".
func (r *Report) costCommands(lib string, g int) string {
	type cmd struct {
		name  string
		calls float64
	}
	var cs []cmd
	for _, name := range r.CostCmds {
		if c := r.S.med("cost-calls", lib, g, name); !math.IsNaN(c) && c >= 0.005 {
			cs = append(cs, cmd{name, c})
		}
	}
	slices.SortFunc(cs, func(a, b cmd) int {
		if a.calls != b.calls {
			return cmp.Compare(b.calls, a.calls)
		}
		return strings.Compare(a.name, b.name)
	})
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %.2f (%.2f)", c.name, c.calls, r.S.med("cost-usec", lib, g, c.name))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// startProfile starts a CPU profile of this process for one throughput run
// into dir (none when dir is ""), and returns what stops it.
func startProfile(dir, lib string, g, rep int) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	name := strings.NewReplacer(" ", "", "(", "", ")", "", ",", "").Replace(lib)
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("tp-%s-%d-%d.pprof", name, g, rep+1)))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
