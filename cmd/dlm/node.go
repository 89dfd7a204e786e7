package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"dlm/redlock"
	"dlm/redlock/goredis"
)

// nodeMarker is the file in the data directory that exists while a node
// runs; finding it at start means the previous run did not stop cleanly.
const nodeMarker = "dlm-node.running"

// newNodeCmd builds "dlm node".
func newNodeCmd() *cobra.Command {
	var (
		nc     nodeConfig
		pwFile string
	)
	cmd := &cobra.Command{
		Use:   "node [flags] [-- REDIS-SERVER-ARGS...]",
		Short: "Run one Redlock node: redis-server with delayed restarts after a crash",
		Long: `Run redis-server in the foreground as one Redlock node, the safe way.

While the node runs, a marker file (` + nodeMarker + `) exists in its data
directory. When a run ends without a clean shutdown (a crash, SIGKILL, power
loss), the marker stays; the next start then waits --max-ttl (or the
crashed run's --max-ttl, which the marker records, when that was larger)
before starting redis-server, so that every lock key the node held has
expired before it serves again (the delayed restart, argued in docs/spec/redlock.md). A
clean shutdown (SIGTERM, SIGINT or SHUTDOWN: redis-server exits 0) removes
the marker only when the node persists its keys (appendonly yes, the
default here); without persistence a restarted node has forgotten its keys
whatever the shutdown, so every restart waits. AOF is fsynced every second (redis' appendfsync everysec):
enough for lock keys with the delayed restart, not for fencing tokens,
which outlive every ttl; with --fencing (nodes of dlm lock --fencing and of
dlm elect, which always fences) every write is fsynced (appendfsync
always), as dlm doctor requires of a node that holds fence keys.

--max-ttl must exceed the largest ttl any client uses with these nodes.
A port already in use is refused (exit 64) before anything is written or
started; dlm node writes only to the redis-server it started (checked by
its process id). A data directory is served by one dlm node at a time: a
second one on it is refused (64; the lock file ` + nodeDirLock + `).

The node's password is read from the file --requirepass-file (its first
line) or from the environment variable ` + nodePasswordEnv + `, and given to
redis-server on its standard input, never on a command line, which every
local user can read (ps); a password after -- is refused (--requirepass,
--masterauth, the TLS key passphrases, a --user rule with >password):
put those in a --config file that only you can read.
SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to redis-server. Restarts
are the supervisor's job (systemd: Restart=always); dlm node exits with
redis-server's exit code. Arguments after -- go to redis-server and override
the defaults (--appendonly yes, --bind, --port, --dir, --daemonize no).

With --cluster M, the node is a Redis Cluster of M masters on ports --port
and up, each with the marker and delayed restart above. When one master
ends uncleanly, the others are stopped and dlm node exits with its code:
the node lost that master's keys, so it is restarted whole, and the
crashed master waits --max-ttl before it serves again.`,
		Example: `  dlm node --port 6379 --dir /var/lib/dlm-node --max-ttl 40s
  dlm node --port 6380 --dir ./n2 --max-ttl 15s -- --maxmemory-policy noeviction
  dlm node --cluster 3 --port 7000 --dir ./c1 --max-ttl 15s   # one node, a cluster of 3 masters`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 0 || dash < 0 && len(args) > 0 {
				return usageErrorf("unexpected arguments %q: redis-server arguments go after `--`", args)
			}
			nc.extra = args
			if err := ownedAfterDash(args); err != nil {
				return err
			}
			if err := nc.readPassword(pwFile); err != nil {
				return err
			}
			if err := nc.validate(); err != nil {
				return err
			}
			if nc.cluster > 0 {
				return nc.runCluster(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()) // node_cluster.go
			}
			return nc.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&nc.port, "port", 6379, "TCP port of the node")
	f.StringVar(&nc.bind, "bind", "127.0.0.1", "address(es) redis-server listens on, space-separated")
	f.StringVar(&nc.dir, "dir", ".", "data directory (AOF files and the restart marker)")
	f.DurationVar(&nc.maxTTL, "max-ttl", 15*time.Second, "wait after an unclean stop, so that every lock key the node held has expired; must exceed the largest lock ttl in use")
	f.BoolVar(&nc.fencing, "fencing", false, "the node serves fencing tokens (dlm lock --fencing, dlm elect): appendfsync always, so that no fence increment is lost in a crash (dlm doctor checks it)")
	f.StringVar(&nc.config, "config", "", "redis.conf to start redis-server with (the flags above override it)")
	f.StringVar(&nc.binary, "redis-server", "redis-server", "redis-server executable")
	f.DurationVar(&nc.startTimeout, "start-timeout", 30*time.Second, "how long redis-server may take to answer PING")
	f.StringVar(&pwFile, "requirepass-file", "", "file whose first line is the node's password (or set "+nodePasswordEnv+"); never on the command line")
	f.IntVar(&nc.cluster, "cluster", 0, "run a Redis Cluster of this many masters as one node, on ports --port and up, data in --dir/PORT (0: one plain master)")
	return cmd
}

// nodeConfig is one dlm node invocation.
type nodeConfig struct {
	port         int
	bind         string
	dir          string
	maxTTL       time.Duration
	fencing      bool // --fencing: appendfsync always
	config       string
	binary       string
	startTimeout time.Duration
	extra        []string
	password     string // --requirepass-file or DLM_NODE_PASSWORD; "" for none
	cluster      int    // --cluster: masters of a cluster node (node_cluster.go)
	member       bool   // one master of a cluster node: --max-ttl is recorded by form
	// stop, closed, stops a member's redis-server as SIGTERM would: its
	// cluster node lost another master (node_cluster.go).
	stop <-chan struct{}
}

func (nc *nodeConfig) validate() error {
	switch {
	case nc.port < 1 || nc.port > 65535:
		return usageErrorf("--port must be from 1 to 65535, got %d", nc.port)
	case nc.maxTTL <= 0:
		return usageErrorf("--max-ttl must be positive (and exceed the largest lock ttl in use), got %v", nc.maxTTL)
	case nc.maxTTL > maxNodeMaxTTL:
		return overDuration("--max-ttl", nc.maxTTL, maxNodeMaxTTL)
	case nc.startTimeout <= 0:
		return usageErrorf("--start-timeout must be positive, got %v", nc.startTimeout)
	case nc.fencing && (nc.setting("appendfsync") != "always" || nc.setting("appendonly") != "yes"):
		return usageErrorf("--fencing needs appendonly yes and appendfsync always; the arguments after -- say appendonly %s, appendfsync %s", nc.setting("appendonly"), nc.setting("appendfsync"))
	case nc.dir == "":
		return usageErrorf("--dir must name the node's data directory")
	case nc.cluster < 0:
		return usageErrorf("--cluster must be 0 (one plain master) or a number of masters, got %d", nc.cluster)
	}
	if _, err := exec.LookPath(nc.binary); err != nil {
		return withCode(exitUnavailable, fmt.Errorf("%s not found (install redis-server, or give --redis-server PATH): %w", nc.binary, err))
	}
	if err := os.MkdirAll(nc.dir, 0o755); err != nil {
		return usageErrorf("--dir %q: %v", nc.dir, err)
	}
	if nc.cluster > 0 {
		return nil // members checks each master's port
	}
	return nc.portFree()
}

// setting returns the last value given to redis-server for --name on its
// command line (ours or the user's after --, which come later and win),
// or "" when none is. Names are matched in any case, as redis-server
// reads them (--APPENDONLY no turns persistence off too).
func (nc *nodeConfig) setting(name string) string {
	if name == "requirepass" {
		return nc.password // never on the command line (readPassword)
	}
	argv, v := nc.argv(), ""
	for i := 0; i+1 < len(argv); i++ {
		if strings.EqualFold(argv[i], "--"+name) {
			v = argv[i+1]
		}
	}
	return v
}

// portFree refuses a port that something already listens on, before the
// marker is written or anything is started: a redis-server there is not
// ours, and dlm node must never write to it.
func (nc *nodeConfig) portFree() error {
	return nc.listenFree(nc.setting("port"), "")
}

// listenFree is portFree for port on the node's bind addresses; bus, when
// not empty, names the port as a cluster bus port in the refusal.
func (nc *nodeConfig) listenFree(port, bus string) error {
	for _, addr := range strings.Fields(nc.setting("bind")) {
		optional := strings.HasPrefix(addr, "-") // redis-server's "-addr": skipped when unavailable
		addr = strings.TrimPrefix(addr, "-")
		switch addr {
		case "*":
			addr = "0.0.0.0"
		case "::*":
			addr = "::"
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, port))
		if err == nil {
			ln.Close()
			continue
		}
		if errors.Is(err, syscall.EADDRINUSE) && bus != "" {
			return usageErrorf("port %s on %s, the cluster bus port of %s, is already in use (a server or an outgoing connection holds it): give a --port whose masters' ports plus 10000 are free, best outside the ephemeral range (/proc/sys/net/ipv4/ip_local_port_range); dlm node starts nothing and writes nothing there", port, addr, bus)
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return usageErrorf("port %s on %s is already in use (another server listens there): give a free --port; dlm node starts nothing and writes nothing there", port, addr)
		}
		if !optional {
			return usageErrorf("--bind %s, port %s: %v", addr, port, err)
		}
	}
	return nil
}

// argv is the redis-server command line: the config file first (as
// redis-server requires), our defaults, then the user's arguments.
func (nc *nodeConfig) argv() []string {
	a := []string{nc.binary}
	switch {
	case nc.password != "":
		a = append(a, "-") // the configuration on standard input: stdinConfig
	case nc.config != "":
		a = append(a, nc.config)
	}
	a = append(a, "--port", strconv.Itoa(nc.port), "--bind", nc.bind, "--dir", nc.dir,
		"--daemonize", "no", "--appendonly", "yes")
	if nc.fencing {
		a = append(a, "--appendfsync", "always")
	}
	return append(a, nc.extra...)
}

func (nc *nodeConfig) run(ctx context.Context, stdout, stderr io.Writer) error {
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "dlm node: "+format+"\n", args...)
	}
	// Signals are redis-server's once it runs; before that they end the
	// delayed-restart wait. The root context (cancelled by the same
	// signals) is not used to stop the server.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	unlock, err := lockDataDir(nc.dir)
	if err != nil {
		return err
	}
	defer unlock()
	marker := filepath.Join(nc.dir, nodeMarker)
	if b, err := os.ReadFile(marker); err == nil {
		wait, why := restartWait(b, nc.maxTTL)
		logf("the previous run did not stop cleanly (marker %s: %s); waiting %s before serving, so that every lock key it held has expired (delayed restart)", marker, trimNL(b), why)
		t := time.NewTimer(wait)
		select {
		case s := <-sigs:
			t.Stop()
			logf("%v during the delayed-restart wait: not starting; the marker stays, so the next start waits again", s)
			return nil
		case <-nc.stop: // its cluster node is stopping (node_cluster.go)
			t.Stop()
			logf("the cluster node stops during the delayed-restart wait: not starting; the marker stays")
			return nil
		case <-t.C:
		}
		logf("delayed-restart wait over; starting redis-server")
	}
	if err := writeMarker(marker, markerText(os.Getpid(), time.Now(), nc.maxTTL)); err != nil {
		return fmt.Errorf("write restart marker: %w", err)
	}

	argv := nc.argv()
	srv := exec.Command(argv[0], argv[1:]...)
	srv.Stdout, srv.Stderr = stdout, stderr
	if nc.password != "" {
		srv.Stdin = strings.NewReader(nc.stdinConfig())
	}
	// Own process group: a terminal's Ctrl-C reaches redis-server once,
	// through us (a second SIGINT makes it exit at once, uncleanly); and it
	// dies with us if we are killed.
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		return withCode(exitUnavailable, fmt.Errorf("start %s: %w", argv[0], err))
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	logf("redis-server pid %d starting on port %d (data dir %s)", srv.Process.Pid, nc.port, nc.dir)

	// Whether the node persists its keys follows from its command line,
	// where our --appendonly yes is overridden only by the user's.
	persists := nc.setting("appendonly") == "yes"
	readyDone := make(chan struct{})
	rctx, stopReady := context.WithCancel(context.WithoutCancel(ctx))
	defer stopReady()
	go func() { defer close(readyDone); nc.ready(rctx, srv.Process.Pid, persists, logf) }()

	for {
		select {
		case s := <-sigs:
			_ = srv.Process.Signal(s)
		case <-nc.stop:
			nc.stop = nil
			_ = srv.Process.Signal(syscall.SIGTERM)
		case werr := <-exited:
			stopReady()
			<-readyDone // ready returns at once once stopped
			if werr == nil && persists {
				if err := os.Remove(marker); err != nil {
					logf("clean shutdown, but the marker could not be removed (%v): the next start will wait --max-ttl", err)
				} else {
					logf("clean shutdown with persistence: marker removed, the next start will not wait")
				}
				return nil
			}
			if werr == nil {
				logf("clean shutdown, but the node does not persist its keys (appendonly no, or unknown): it has forgotten them, so the marker stays and the next start waits --max-ttl")
				return nil
			}
			logf("redis-server ended uncleanly (%v): the marker stays, the next start waits --max-ttl", werr)
			return childExit(werr)
		}
	}
}

// ready waits for the new server to answer and, once it has checked that
// the server answering is the process it started (INFO's process_id is
// pid), records --max-ttl on it for dlm doctor. It logs "serving" only
// then. A --requirepass given after -- is used to talk to it.
func (nc *nodeConfig) ready(ctx context.Context, pid int, persists bool, logf func(string, ...any)) {
	u, err := redlock.ParseNodeURL("redis://" + net.JoinHostPort(nc.host(), nc.setting("port")))
	if err != nil {
		return
	}
	u.Password = nc.setting("requirepass")
	c := goredis.NewClient(u)
	defer c.Close()
	deadline := time.Now().Add(nc.startTimeout)
	var info string
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		info, err = c.Info(pctx, "server").Result()
		cancel()
		var rerr redis.Error
		if err == nil || errors.As(err, &rerr) {
			break // up (a redis error such as NOAUTH also means it serves)
		}
		if ctx.Err() != nil {
			return
		}
		if time.Now().After(deadline) {
			logf("redis-server did not answer within --start-timeout %v: %v", nc.startTimeout, err)
			return
		}
		t := time.NewTimer(50 * time.Millisecond) // polling interval, bounded by the deadline
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	aof := map[bool]string{true: "yes", false: "no"}[persists]
	switch got := parseInfo(info)["process_id"]; {
	case err != nil:
		logf("serving on %s (appendonly %s, delayed restart after a crash: %v); --max-ttl not recorded for dlm doctor: %v", u.Addr, aof, nc.maxTTL, err)
	case got != strconv.Itoa(pid):
		logf("the server answering on %s is process %s, not the redis-server started here (%d): nothing written to it", u.Addr, got, pid)
	case nc.member:
		logf("serving on %s (cluster member, delayed restart after a crash: %v)", u.Addr, nc.maxTTL)
	default:
		if err := c.Set(ctx, nodeMaxTTLKey, nc.maxTTL.String(), 0).Err(); err != nil {
			logf("could not record --max-ttl on the node for dlm doctor: %v", err)
		}
		logf("serving on %s (appendonly %s, delayed restart after a crash: %v)", u.Addr, aof, nc.maxTTL)
	}
}

// markerText is the restart marker's content: the run's pid, its start
// and the --max-ttl it advertises, which the clients' lock ttls may reach
// and which the start after a crash must therefore wait (restartWait).
func markerText(pid int, started time.Time, maxTTL time.Duration) string {
	return fmt.Sprintf("pid %d started %s max-ttl %s", pid, started.UTC().Format(time.RFC3339), maxTTL)
}

// restartWait returns how long a start after an unclean stop waits, and
// the words that say so: the larger of this run's --max-ttl and the one
// the crashed run recorded in its marker, since locks taken on the crashed
// run may be as long as the max ttl it advertised. A marker without one (a
// run of an older dlm) leaves this run's --max-ttl.
func restartWait(marker []byte, maxTTL time.Duration) (time.Duration, string) {
	f := strings.Fields(string(marker))
	for i := 0; i+1 < len(f); i++ {
		if f[i] != "max-ttl" {
			continue
		}
		prev, err := time.ParseDuration(f[i+1])
		if err == nil && prev > maxTTL {
			return prev, fmt.Sprintf("the crashed run's --max-ttl %v (over this run's %v: its locks may be that long)", prev, maxTTL)
		}
		break
	}
	return maxTTL, fmt.Sprintf("--max-ttl %v", maxTTL)
}

// writeMarker writes the restart marker durably (file and directory
// synced), so that it survives the power loss it is there to detect.
func writeMarker(path, content string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func trimNL(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return string(b)
}

func firstField(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i]
		}
	}
	return s
}

// nodeDirLock is the lock file of a data directory: the dlm node serving
// it holds an exclusive flock on it for as long as it runs (the kernel
// drops it when the process ends, however it ends).
const nodeDirLock = "dlm-node.lock"

// nodePasswordEnv holds the node's password when --requirepass-file is
// not given.
const nodePasswordEnv = "DLM_NODE_PASSWORD"

// lockDataDir takes the data directory's lock file, or refuses (64) a
// directory that a running dlm node holds: two nodes on one directory
// would read each other's marker as a crash, run two redis-servers on one
// append-only file, and remove each other's marker. The returned function
// releases it.
func lockDataDir(dir string) (func(), error) {
	path := filepath.Join(dir, nodeDirLock)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, withCode(exitCantCreate, fmt.Errorf("open the data directory's lock file: %w", err))
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, usageErrorf("data directory %q is used by a running dlm node (it holds %s): give each node its own --dir", dir, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// readPassword sets the node's password from file (its first line), or
// else from DLM_NODE_PASSWORD, and refuses one given to redis-server on
// its command line, where every local user can read it.
func (nc *nodeConfig) readPassword(file string) error {
	if opt, ok := secretOnArgv(nc.extra); ok {
		safe := "put it in a redis.conf that only you can read, given with --config FILE"
		if opt == "requirepass" {
			safe = "give it with --requirepass-file FILE or in " + nodePasswordEnv
		}
		return usageErrorf("a password after -- (--%s) is on redis-server's and dlm node's command lines, which every local user can read (ps): %s", opt, safe)
	}
	if file == "" {
		nc.password = os.Getenv(nodePasswordEnv)
		return nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return usageErrorf("--requirepass-file: %v", err)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	nc.password = strings.TrimSuffix(pw, "\r")
	if nc.password == "" {
		return usageErrorf("--requirepass-file %q: the first line is empty; write the password on it", file)
	}
	return nil
}

// ownedAfterDash refuses, among the redis-server arguments after --, the
// options dlm node owns and checks: the data directory (--dir), whose lock
// file and restart marker dlm node keeps, so that two nodes never serve
// one data directory. Matched in any case, as redis-server reads them.
func ownedAfterDash(args []string) error {
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		if name, _, _ := strings.Cut(strings.ToLower(a[2:]), "="); name == "dir" {
			return usageErrorf("%q after --: the data directory is dlm node's own --dir (it locks the directory, so that no two nodes serve one, and keeps its restart marker there); give it as `dlm node --dir DIR`", a)
		}
	}
	return nil
}

// secretOnArgv returns the redis-server option of args (what dlm node
// passes after --) that carries a secret, if any: an option whose value
// is one (--requirepass, --masterauth, the TLS key passphrases), in any
// case as redis-server reads them, or a --user ACL rule that sets or
// removes a password (">pw", "<pw"), in one argument or several.
func secretOnArgv(args []string) (string, bool) {
	user := false // within the values of a --user
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(strings.ToLower(a[2:]), "=")
			switch name {
			case "requirepass", "masterauth", "tls-key-file-pass", "tls-client-key-file-pass":
				return name, true
			}
			user = name == "user"
			if !user || !strings.Contains(a, "=") {
				continue
			}
			_, a, _ = strings.Cut(a, "=")
		}
		if !user {
			continue
		}
		for _, rule := range strings.Fields(a) {
			if strings.HasPrefix(rule, ">") || strings.HasPrefix(rule, "<") {
				return "user", true
			}
		}
	}
	return "", false
}

// stdinConfig is the configuration redis-server reads on its standard
// input when the node has a password: the --config file, included, and
// the password, quoted as redis.conf reads a quoted string.
func (nc *nodeConfig) stdinConfig() string {
	var b strings.Builder
	if nc.config != "" {
		b.WriteString("include " + redisQuote(nc.config) + "\n")
	}
	b.WriteString("requirepass " + redisQuote(nc.password) + "\n")
	return b.String()
}

// redisQuote quotes s for redis.conf: between double quotes, with "\"",
// "\\" and every byte outside printable ASCII as \xHH.
func redisQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
