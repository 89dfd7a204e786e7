package redisproc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dlm/internal/ports"
	"dlm/redlock/redisproc"
)

func requireRedis(t *testing.T) {
	t.Helper()
	if redisproc.Available() {
		return
	}
	if os.Getenv("CI") != "" || os.Getenv("DLM_REQUIRE_REDIS") != "" {
		t.Fatal("redis-server not found on PATH (CI or DLM_REQUIRE_REDIS is set)")
	}
	t.Skip("SKIPPED: redis-server not found on PATH (Debian: apt-get install redis-server)")
}

// A wrapper that runs redis-server as its child: Kill must reach the child
// too and return, even though the child held the output pipe open.
func TestKillReachesAWrappersChild(t *testing.T) {
	requireRedis(t)
	p, err := redisproc.Start(t.Context(), redisproc.Config{Wrapper: []string{"sh", "-c", `"$0" "$@"; :`}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan struct{})
	go func() { p.Kill(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Kill of a wrapped redis-server did not return")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.Client().Ping(ctx).Err(); err == nil {
		t.Fatal("the wrapped redis-server still answers after Kill")
	}
}

// A port served by another redis-server is not taken for the process
// started: its redis-server cannot bind the port and exits, and the other
// server's PING answer must not pass for its own (a torture run added a
// cluster's slots to a server of another cluster that had picked the same
// free port: "Slot 8192 is already busy"). Restart on a port taken
// meanwhile fails the same way.
func TestStartRefusesAPortServedByAnother(t *testing.T) {
	requireRedis(t)
	other, err := redisproc.Start(t.Context(), redisproc.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	p, err := redisproc.Start(t.Context(), redisproc.Config{Port: other.Port()})
	if err == nil {
		p.Close()
		t.Fatalf("Start on port %d, served by another redis-server, succeeded", other.Port())
	}
	if !errors.Is(err, redisproc.ErrPortTaken) {
		t.Fatalf("Start on a port served by another redis-server: %v, want ErrPortTaken", err)
	}
	if err := other.Client().Ping(t.Context()).Err(); err != nil {
		t.Fatalf("the other redis-server stopped answering: %v", err)
	}
}

// The ports FreePort gives, and their cluster bus ports, are below the
// ephemeral range: a process restarts on its port, and a port of that
// range, free meanwhile, may be taken by any outgoing connection of the
// machine (the nodes' proxies of checker/torture, which listen again on
// their port, failed that way: "listen tcp 127.0.0.1:41055: bind: address
// already in use").
func TestFreePortBelowEphemeralRange(t *testing.T) {
	low := 32768 // Linux's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	for range 50 {
		port, err := redisproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port+10000 >= low {
			t.Fatalf("FreePort = %d (bus port %d), want both below the ephemeral range from %d", port, port+10000, low)
		}
	}
}

// A server's port stays reserved (dlm/internal/ports) while it is killed,
// until its Close, so that its restart finds it free: checked free by a
// bind alone, a killed server's port was drawn by another package's test,
// whose redis-server took it before the restart (checker/torture's
// rolling restart, in a fresh-clone run: "redisproc: the port is served by
// another process: port 14106 answers as redis-server pid 19370, not the
// one started").
func TestAKilledServersPortStaysReserved(t *testing.T) {
	requireRedis(t)
	p, err := redisproc.Start(t.Context(), redisproc.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	port := p.Port()
	p.Kill()
	if !locked(t, port) {
		t.Errorf("the port %d of a killed server, to be restarted, is not reserved", port)
	}
	if err := p.Restart(t.Context(), 0); err != nil {
		t.Fatalf("restart on the port kept: %v", err)
	}
	p.Close()
	if locked(t, port) {
		t.Errorf("the port %d of a closed server is still reserved", port)
	}
}

// locked reports whether port's reservation is held (dlm/internal/ports).
func locked(t *testing.T, port int) bool {
	t.Helper()
	fd, err := syscall.Open(filepath.Join(ports.Dir(), strconv.Itoa(port)), syscall.O_RDONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(fd, syscall.LOCK_UN)
	return false
}
