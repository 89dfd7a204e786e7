package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"dlm/redlock/redisproc"
)

// selfCPU is this process's CPU time so far (getrusage).
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// cpuTimes is CPU time spent so far: by this process (the client under
// test, its goroutines and go's runtime) and by the redis-server nodes
// together.
type cpuTimes struct {
	client, redis time.Duration
}

// readCPU reads the process's rusage and each node's INFO cpu
// (used_cpu_user + used_cpu_sys).
func readCPU(ctx context.Context, nodes []*redisproc.Process) (cpuTimes, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuTimes{}, fmt.Errorf("getrusage: %w", err)
	}
	t := cpuTimes{client: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	for _, p := range nodes {
		info, err := p.Client().Info(ctx, "cpu").Result()
		if err != nil {
			return cpuTimes{}, fmt.Errorf("INFO cpu of %s: %w", p.Addr(), err)
		}
		d, err := redisCPU(info)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("INFO cpu of %s: %w", p.Addr(), err)
		}
		t.redis += d
	}
	return t, nil
}

// redisCPU sums used_cpu_user and used_cpu_sys of an INFO cpu reply.
func redisCPU(info string) (time.Duration, error) {
	var sum time.Duration
	found := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_user" && k != "used_cpu_sys") {
			continue
		}
		sec, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %q: %w", k, v, err)
		}
		sum += time.Duration(sec * float64(time.Second))
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("no used_cpu_user and used_cpu_sys in %q", info)
	}
	return sum, nil
}

// loadAvg returns the 1-minute load average, "" where /proc/loadavg is
// missing.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// machineCPU is the CPU time that all of the machine's CPUs spent busy so
// far (/proc/stat: user, nice, system, irq, softirq, steal), this process's
// own (getrusage), and when it was read.
type machineCPU struct {
	busy, self time.Duration
	at         time.Time
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// readMachineCPU reads /proc/stat's first line.
func readMachineCPU() (machineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system (idle iowait) irq softirq steal
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		ticks += v
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return machineCPU{}, fmt.Errorf("getrusage: %w", err)
	}
	return machineCPU{
		busy: time.Duration(ticks) * clockTick,
		self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		at:   time.Now(),
	}, nil
}

// othersSince returns how many cores other processes kept busy on average
// since start: the machine's busy time less this process's and less ours
// (the CPU time of the processes this program started, since start).
func (m machineCPU) othersSince(start machineCPU, ours time.Duration) float64 {
	wall := m.at.Sub(start.at)
	if wall <= 0 {
		return 0
	}
	others := (m.busy - start.busy) - (m.self - start.self) - ours
	return max(0, others.Seconds()/wall.Seconds())
}

// othersCPU measures for d how many cores the machine's other processes
// keep busy, before this program starts any of its own.
func othersCPU(ctx context.Context, d time.Duration) (float64, error) {
	start, err := readMachineCPU()
	if err != nil {
		return 0, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-t.C:
	}
	end, err := readMachineCPU()
	if err != nil {
		return 0, err
	}
	return end.othersSince(start, 0), nil
}

// procCPU returns the CPU time (utime + stime) of a running process, from
// /proc/PID/stat; 0 when it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 { // fields 3.. : utime is field 14, stime 15
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+s) * clockTick
}
