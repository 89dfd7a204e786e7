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
