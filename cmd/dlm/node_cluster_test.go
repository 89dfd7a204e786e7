package main

import (
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/redlocktest"
)

// freeRun returns the first of n consecutive free loopback ports.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{l}
		ok := base+n-1 <= 65535
		for p := base + 1; ok && p < base+n; p++ {
			l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l2)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

// dlm node --cluster 3 forms a cluster of three masters, prints its node
// URL, serves keys over every slot, and stops cleanly on SIGTERM.
func TestNodeCluster(t *testing.T) {
	redlocktest.Require(t)
	port := freeRun(t, 3)
	cmd, stdout, stderr := dlmCmd(t, nil, "node", "--cluster", "3", "--port", strconv.Itoa(port), "--dir", t.TempDir(),
		"--max-ttl", "1s", "--", "--save", "", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("dlm node --cluster did not stop on SIGTERM; log:\n%s", stderr.String())
		}
	}()
	redlocktest.Eventually(t, 60*time.Second, func() bool { return strings.Contains(stdout.String(), "cluster=true") },
		"dlm node --cluster printed no node URL; log:\n%s", stderr.String())
	want := "redis://127.0.0.1:" + strconv.Itoa(port) + "?addr=127.0.0.1%3A" + strconv.Itoa(port+1) + "&addr=127.0.0.1%3A" + strconv.Itoa(port+2) + "&cluster=true"
	if got := strings.TrimSpace(stdout.String()); got != want {
		t.Errorf("node URL = %q, want %q", got, want)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:" + strconv.Itoa(port)}})
	defer cc.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := cc.Set(t.Context(), k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s through the cluster: %v", k, err)
		}
	}
	if v, err := cc.Get(t.Context(), nodeMaxTTLKey).Result(); err != nil || v != "1s" {
		t.Errorf("recorded --max-ttl = %q, %v; want 1s", v, err)
	}
	// The printed URL is a node for --nodes and DLM_NODES, with either
	// adapter.
	for _, a := range []string{"goredis", "rueidis"} {
		r := runDLM(t, 30*time.Second, []string{nodesEnv + "=" + want}, "lock", "--adapter", a, "--node-timeout", "1s", "--fencing", "r", "--", "true")
		if r.code != 0 {
			t.Errorf("dlm lock --adapter %s over the cluster node: exit %d; stderr:\n%s", a, r.code, r.stderr)
		}
	}
}
