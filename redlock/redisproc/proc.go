package redisproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/internal/ports"
)

// Binary is the name of the redis-server executable looked up on PATH.
const Binary = "redis-server"

// ErrNotFound is returned by Start when redis-server is not on PATH.
var ErrNotFound = errors.New("redisproc: redis-server not found on PATH (Debian: apt-get install redis-server)")

// ErrClusterState is wrapped by the error of a Cluster that did not reach
// the state it waited for (cluster_state:ok, a replica's promotion) within
// ClusterConfig.StateTimeout: Redis' own convergence, not its client's.
var ErrClusterState = errors.New("redisproc: the cluster did not converge in time")

// ErrPortTaken is wrapped by the error of Start or Restart when the port
// is served by another process than the redis-server started: a port
// picked free was taken by someone else before the server bound it (Start
// with Port 0 then tries another port), or a killed process's port was
// taken before its restart.
var ErrPortTaken = errors.New("redisproc: the port is served by another process")

// Available reports whether redis-server is on PATH.
func Available() bool {
	_, err := exec.LookPath(Binary)
	return err == nil
}

// Config describes one redis-server process.
type Config struct {
	// Dir is the data directory; Start creates a temporary one when empty
	// and Close removes it.
	Dir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one (FreePort),
	// reserved for the process until its Close.
	Port int
	// Persistence turns on AOF with appendfsync always (R16.2).
	Persistence bool
	// Args are extra redis-server arguments ("--maxmemory-policy", "allkeys-lru").
	Args []string
	// Env adds KEY=VALUE entries to the process environment (libfaketime).
	Env []string
	// Wrapper runs redis-server under a command, such as {"faketime", "-f", "+0"}.
	Wrapper []string
	// StartTimeout bounds the wait for the first PING answer. Default 10s.
	StartTimeout time.Duration
}

// Process is one redis-server process. Its methods are safe for concurrent use.
type Process struct {
	cfg     Config
	ownsDir bool
	port    *ports.Port // the port drawn by Start (Port 0), held until Close
	client  *redis.Client

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	frozen  bool
	stopped bool
	closed  bool
	log     *syncBuffer
}

// Start launches redis-server as configured and waits until it answers PING.
// With Port 0 it picks a free loopback port and reserves it until Close
// (FreePort), retrying if the port is taken in between by a process that
// does not reserve.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if !Available() && len(cfg.Wrapper) == 0 {
		return nil, ErrNotFound
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 10 * time.Second
	}
	p := &Process{cfg: cfg}
	if p.cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "dlm-redis-")
		if err != nil {
			return nil, err
		}
		p.cfg.Dir, p.ownsDir = dir, true
	}
	var err error
	for try := 0; try < 5; try++ {
		if cfg.Port == 0 {
			if p.port, err = ports.Reserve(); err != nil {
				continue
			}
			p.cfg.Port = p.port.Number()
		}
		if err = p.start(ctx); err == nil {
			return p, nil
		}
		if cfg.Port != 0 || ctx.Err() != nil {
			break
		}
		p.port.Release() // taken by a process that ignores reservations
	}
	p.Close()
	return nil, err
}

// FreePort returns a loopback port that is free now and reserved for the
// rest of the calling process's life (dlm/internal/ports): no server of
// dlm's, in any process of the machine, is given it or its cluster bus
// port (the port plus 10000) meanwhile, so that the caller can start a
// server there, and start it again after a kill. It is drawn from
// 10000-19999, below Linux's ephemeral range.
func FreePort() (int, error) {
	p, err := ports.Reserve()
	if err != nil {
		return 0, err
	}
	return p.Number(), nil // never released: held until the process ends
}

// Addr returns 127.0.0.1:port.
func (p *Process) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.cfg.Port) }

// Port returns the port.
func (p *Process) Port() int { return p.cfg.Port }

// URL returns the redis:// URL of the process.
func (p *Process) URL() string { return "redis://" + p.Addr() }

// Dir returns the data directory.
func (p *Process) Dir() string { return p.cfg.Dir }

// Client returns a go-redis client for inspecting the node directly.
func (p *Process) Client() *redis.Client { return p.client }

func (p *Process) args() []string {
	a := []string{
		"--port", strconv.Itoa(p.cfg.Port),
		"--bind", "127.0.0.1",
		"--dir", p.cfg.Dir,
		"--save", "",
		"--daemonize", "no",
		"--protected-mode", "no",
		"--loglevel", "warning",
		"--logfile", "",
	}
	if p.cfg.Persistence {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	return append(a, p.cfg.Args...)
}

// start launches the process and waits for PING.
func (p *Process) start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	argv := append(append([]string{}, p.cfg.Wrapper...), Binary)
	argv = append(argv, p.args()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), p.cfg.Env...)
	p.log = new(syncBuffer)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// Its own process group, so that signals reach a wrapper's child too;
	// WaitDelay, so that a child that keeps the output pipe open cannot
	// hold Wait forever.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisproc: start %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	prev := 0 // the pid of the process this one restarts
	if p.cmd != nil {
		prev = p.cmd.Process.Pid
	}
	p.cmd, p.exited, p.frozen, p.stopped = cmd, exited, false, false
	if p.client == nil || p.client.Options().Addr != p.Addr() {
		if p.client != nil {
			_ = p.client.Close()
		}
		p.client = redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, DialTimeout: time.Second,
			DialerRetries: 1, Protocol: 2, DisableIdentity: true, ContextTimeoutEnabled: true})
	}
	deadline := time.Now().Add(p.cfg.StartTimeout)
	for {
		// Probe the port with a plain dial first: failed dials through the
		// go-redis client would trip its pool's dial back-off (one retry a
		// second once PoolSize dials failed), stretching a restart to 1s.
		var err error
		if c, derr := net.DialTimeout("tcp", p.Addr(), 200*time.Millisecond); derr != nil {
			err = derr
		} else {
			_ = c.Close()
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			err = p.client.Ping(pctx).Err()
			cancel()
		}
		fail := func(reason error) error {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			p.stopped = true
			return reason
		}
		if err == nil {
			// The server that answers may be another one: a port picked
			// free may be taken by another process before this one
			// binds it (it then exits), and a killed process's port may
			// be taken before its restart.
			pid, ierr := p.serverPID(ctx)
			switch {
			case ierr != nil:
				err = ierr
			case !inGroup(pid, cmd.Process.Pid):
				return fail(fmt.Errorf("%w: port %d answers as redis-server pid %d, not the one started (pid %d; the one it restarts: %d)", ErrPortTaken, p.cfg.Port, pid, cmd.Process.Pid, prev))
			default:
				return nil
			}
		}
		select {
		case <-exited:
			p.stopped = true
			return fmt.Errorf("redisproc: redis-server on port %d exited: %s", p.cfg.Port, strings.TrimSpace(p.log.String()))
		case <-ctx.Done():
			return fail(ctx.Err())
		default:
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("redisproc: redis-server on port %d did not answer PING within %v: %v", p.cfg.Port, p.cfg.StartTimeout, err))
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline above
	}
}

// serverPID returns the process id that the server on p's port reports
// (INFO server: process_id), over a new connection of its own, not
// p.client's pool, which may hold connections to a process just killed:
// a Restart once read the pid of the process it had killed (reaped
// already) and failed with ErrPortTaken, at load 23.
func (p *Process) serverPID(ctx context.Context) (int, error) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, DialTimeout: time.Second, PoolSize: 1,
		Protocol: 2, DisableIdentity: true, ContextTimeoutEnabled: true})
	defer c.Close()
	info, err := c.Info(pctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("redisproc: INFO server has no process_id")
}

// inGroup reports whether process pid is in process group pgid: the
// redis-server started, or a wrapper's child (start puts each in a group
// of its own).
func inGroup(pid, pgid int) bool {
	g, err := syscall.Getpgid(pid)
	return err == nil && g == pgid
}

// signal sends sig to the process group: redis-server and any wrapper.
func (p *Process) signal(sig syscall.Signal) {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL (a crash: nothing is flushed) and waits for the exit.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killLocked()
}

func (p *Process) killLocked() {
	if p.cmd == nil || p.stopped {
		return
	}
	p.signal(syscall.SIGKILL)
	if p.frozen {
		p.signal(syscall.SIGCONT)
	}
	<-p.exited
	p.stopped, p.frozen = true, false
}

// Stop shuts the server down cleanly (SIGTERM: redis-server flushes its AOF
// and exits) and waits for the exit, killing it after 10s.
func (p *Process) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.stopped {
		return
	}
	if p.frozen {
		p.signal(syscall.SIGCONT)
		p.frozen = false
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.signal(syscall.SIGKILL)
		<-p.exited
	}
	p.stopped = true
}

// Restart kills the process if it runs, waits delay (R16.3's delayed
// restart when delay exceeds the largest ttl in use; ctx ends the wait), and
// starts it again on the same port and data directory.
func (p *Process) Restart(ctx context.Context, delay time.Duration) error {
	p.Kill()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return errors.New("redisproc: restart of a closed process")
	}
	return p.start(ctx)
}

// Freeze stops the process with SIGSTOP: it keeps its sockets but answers
// nothing, like a node in a long pause.
func (p *Process) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.stopped && !p.frozen {
		p.signal(syscall.SIGSTOP)
		p.frozen = true
	}
}

// Thaw resumes a frozen process with SIGCONT.
func (p *Process) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.stopped && p.frozen {
		p.signal(syscall.SIGCONT)
		p.frozen = false
	}
}

// Running reports whether the process is up (frozen counts as up).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.stopped
}

// Frozen reports whether the process is stopped with SIGSTOP.
func (p *Process) Frozen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frozen
}

// Keys returns the keys that start with prefix (by SCAN).
func (p *Process) Keys(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	iter := p.client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

// Log returns what the server printed in its current run.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.log == nil {
		return ""
	}
	return p.log.String()
}

// Close kills the process, closes the inspection client and removes the
// data directory if Start created it. It is idempotent.
func (p *Process) Close() {
	p.mu.Lock()
	p.killLocked()
	p.closed = true
	c := p.client
	p.client = nil
	p.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	if p.ownsDir {
		_ = os.RemoveAll(p.cfg.Dir)
	}
	p.port.Release()
}

// syncBuffer is a bytes.Buffer safe for the process's writes and our reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
