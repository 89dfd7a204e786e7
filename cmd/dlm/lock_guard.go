package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// guardCmdName is the hidden subcommand that dlm lock starts between itself
// and the user's command: `dlm lock` -> `dlm lock-guard` -> COMMAND.
const guardCmdName = "lock-guard"

// guardFD is the descriptor on which the guard reads the pipe from dlm
// lock: the lock's deadlines, then end-of-file when dlm lock has died,
// however it died.
const guardFD = 3

// guardReadyFD is the descriptor on which the guard tells dlm, with one
// byte, that it watches signals.
const guardReadyFD = 4

// noDeadline is the instant of a deadline frame of a holding without one
// (the guard then ends the command only when dlm lock dies or tells it
// to).
const noDeadline int64 = math.MaxInt64

// A command that cannot outlive its lock.
//
// dlm lock starts the guard as the leader of a new process group (the
// terminal's foreground group when dlm itself is in the foreground), and
// the guard starts the command in that group. On Linux, when the kernel
// allows it (root or CAP_SYS_ADMIN; any user where unprivileged user
// namespaces are allowed, through one that maps only the user's own ids:
// guardIsolations), the guard is also the first process of a
// new PID namespace: every process the command starts, even one that
// leaves the group (setsid, double fork), is in that namespace, and the
// kernel kills them all the moment the guard dies, whatever killed it.
// The guard is then in a mount namespace of its own too, where it mounts
// the PID namespace's /proc before it starts the command (privateProc):
// ps and pgrep in the command find its processes by the pids it knows.
// Without a namespace, the guard is a child subreaper (PR_SET_CHILD_SUBREAPER):
// the orphans of the command become its children, so that it finds them.
//
// The pipe from dlm lock (descriptor 3) carries the lock's deadline:
// 16-byte frames, two big-endian instants (CLOCK_MONOTONIC, nanoseconds),
// the end of the validity less a margin, then the end of the validity
// itself, after which the lock may be another's; dlm sends the first
// before the command starts and a new one after every extension. Then:
//
//   - At the deadline, unless a later one came first, the guard kills every
//     process of the command with SIGKILL and exits 74: a dlm lock that is
//     stopped (SIGSTOP, a debugger, a swapped-out machine) or too slow to
//     extend cannot leave the command running past the validity.
//   - Should the guard not run then (stopped with dlm, as `pkill -STOP dlm`
//     does, or starved), on Linux a kernel timer kills with SIGKILL three quarters
//     of the margin before the end of the validity, which the kernel delivers to a stopped process
//     too: without a namespace the guard's own (killTimer), and the
//     command's parent-death signal kills the command; in a namespace,
//     where the kernel drops a signal its first process sends itself, the
//     timer of the guard's sentinel outside it (lock_sentinel.go), whose
//     death kills the guard and so the namespace.
//   - The guard and its sentinel run at the most favoured nice value where
//     the kernel allows it (killerNice; root, CAP_SYS_NICE), the command at
//     dlm's own: each kill above waits for one of them to get a CPU, and
//     on a loaded machine a process of ordinary priority can wait longer
//     than the margin. The guard kills before it says so: a write to a
//     terminal or pipe can block.
//   - Ctrl-Z stops the command, not the guard (it catches SIGTSTP): the
//     guard reports the stop to dlm on descriptor 4, and dlm stops itself
//     so that the shell sees its job stopped (stopJob in lock.go); the
//     guard keeps its deadline while the job is stopped.
//   - If dlm lock dies, even by SIGKILL, the pipe reads end-of-file (the
//     kernel closes dlm's end on any death) and the guard kills the command
//     at once. On Linux the guard also gets a parent-death signal (without
//     a namespace SIGTERM, checked against getppid so that the death of
//     the forking thread alone does nothing; in one, SIGKILL when its
//     sentinel dies, which dies with dlm), and the command gets SIGKILL as
//     its parent-death signal should the guard itself be killed.
//   - If the guard dies (killed alone, or with dlm as `pkill -9 dlm` does):
//     in a PID namespace the kernel kills every process of the command; else
//     the command gets its parent-death signal, and dlm lock, when alive,
//     kills the group.
//   - When the command exits, the guard kills what it left running and
//     reaps it before exiting itself, so that dlm releases the lock only
//     when nothing of the command runs.
//   - dlm lock signals the whole group: SIGTERM on a lost lock, SIGKILL
//     after --grace, the forwarded SIGINT, SIGTERM, SIGHUP and SIGQUIT.
//   - A terminal's Ctrl-C reaches the foreground group: the command once;
//     dlm, not in that group, forwards nothing. When dlm is not in the
//     terminal's foreground group (a script, a pipe), dlm receives the
//     signal alone and forwards it once.
//
// The guard catches the signals the group receives and ignores them itself
// (caught, not ignored: an ignored signal would stay ignored in the
// command after exec; and the first process of a PID namespace only
// receives the signals it catches).
//
// Outside Linux there is no namespace, subreaper or parent-death signal:
// the deadline, the pipe and dlm's signals to the group hold, and a process
// that leaves the group, or the group itself when dlm and the guard die
// together, escapes (docs/operations.md, "Signals").

// isolation is how far dlm lock sets its guard apart (guardAttr).
type isolation int

const (
	// isolateNone: the guard is a child subreaper in its group.
	isolateNone isolation = iota
	// isolatePID: the guard is the first process of a new PID namespace.
	isolatePID
	// isolateUserPID: the same, the PID namespace owned by a new user
	// namespace that maps the caller's uid and gid to themselves, which
	// needs no privilege where the kernel allows it.
	isolateUserPID
)

// guardNSFlag prefixes the guard's first argument when dlm lock started it
// in namespaces: --ns=pid (isolatePID) or --ns=user (isolateUserPID).
const guardNSFlag = "--ns="

// guardArgs are the arguments of the guard dlm lock starts with iso for
// argv.
func guardArgs(iso isolation, argv []string) []string {
	args := []string{guardCmdName}
	switch iso {
	case isolatePID:
		args = append(args, guardNSFlag+"pid")
	case isolateUserPID:
		args = append(args, guardNSFlag+"user")
	}
	return append(append(args, "--"), argv...)
}

// newLockGuardCmd builds the hidden "dlm lock-guard [--sentinel |
// --ns=pid|user] -- COMMAND [ARGS...]": the guard, or with --sentinel the
// guard's parent outside its namespaces (lock_sentinel.go).
func newLockGuardCmd() *cobra.Command {
	return &cobra.Command{
		Use:                guardCmdName + " [--sentinel | --ns=pid|user] -- COMMAND [ARGS...]",
		Short:              "Internal: the process dlm lock puts between itself and the command",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			iso := isolateNone
			sentinel := len(args) > 0 && args[0] == guardSentinelFlag
			if sentinel {
				args = args[1:]
			}
			if len(args) > 0 && strings.HasPrefix(args[0], guardNSFlag) {
				switch args[0] {
				case guardNSFlag + "pid":
					iso = isolatePID
				case guardNSFlag + "user":
					iso = isolateUserPID
				default:
					return usageErrorf("%s: unknown %s (dlm lock gives pid or user)", guardCmdName, args[0])
				}
				args = args[1:]
			}
			if len(args) > 0 && args[0] == "--" {
				args = args[1:]
			}
			if len(args) == 0 {
				return usageErrorf("%s is started by dlm lock, not by hand", guardCmdName)
			}
			if sentinel {
				return runSentinel(args)
			}
			return runGuard(cmd.Context(), args, iso, cmd.ErrOrStderr())
		},
	}
}

// monoNow returns CLOCK_MONOTONIC in nanoseconds: the clock the deadline
// frames are on, the same in dlm lock and in the guard.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("dlm: CLOCK_MONOTONIC: " + err.Error()) // cannot happen on a supported system
	}
	return ts.Nano()
}

// guardDeadline is what a frame from dlm lock carries: two instants on
// CLOCK_MONOTONIC (nanoseconds), noDeadline for none.
type guardDeadline struct {
	// soft is when the guard kills the command itself, says so and exits
	// 74: the end of the lock's validity less a margin.
	soft int64
	// hard is three quarters of the margin before the end of the
	// validity (a quarter after soft), at which
	// the kernel kills the guard (killTimer, or the sentinel's timer)
	// should it not have ended the command by then: stopped with dlm, or
	// starved. Not the end itself: the deaths that follow the timer (the
	// sentinel's, the guard's by its parent-death signal, the
	// namespace's) take scheduling time, which a loaded machine stretches
	// past the few milliseconds of clock drift the validity keeps.
	hard int64
}

// frameSize is the size of a deadline frame: soft then hard, each 8 bytes
// big-endian.
const frameSize = 16

// deadlineFrame encodes the end of a lock's validity until (on this
// process's clock) as a deadline frame for the guard: soft margin before
// it, hard three quarters of the margin before it. A zero until is no
// deadline.
func deadlineFrame(until time.Time, margin time.Duration) []byte {
	soft, hard := noDeadline, noDeadline
	if !until.IsZero() {
		end := monoNow() + int64(time.Until(until))
		soft, hard = end-int64(margin), end-int64(margin*3/4)
	}
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(soft)), uint64(hard))
}

// readDeadlines reads deadline frames from pipe into c until end-of-file
// or an error, then closes c.
func readDeadlines(pipe io.Reader, c chan<- guardDeadline) {
	defer close(c)
	var b [frameSize]byte
	for {
		if _, err := io.ReadFull(pipe, b[:]); err != nil {
			return
		}
		c <- guardDeadline{soft: int64(binary.BigEndian.Uint64(b[:8])), hard: int64(binary.BigEndian.Uint64(b[8:]))}
	}
}

// runGuard runs argv in the guard's process group (and, as iso says, PID
// namespace) under the deadlines dlm lock sends, and exits with its
// status. ctx ends with the first SIGINT or SIGTERM the process got
// (main's signal context), sigs below sees those that come later.
func runGuard(ctx context.Context, argv []string, iso isolation, stderr io.Writer) error {
	parent := os.Getppid()
	pipe := os.NewFile(guardFD, "dlm-lock-pipe")
	var st syscall.Stat_t
	if pipe == nil || syscall.Fstat(guardFD, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return usageErrorf("%s is started by dlm lock, not by hand (descriptor %d is not its pipe)", guardCmdName, guardFD)
	}
	syscall.CloseOnExec(guardFD) // the command must not hold dlm's pipe

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	// Ctrl-Z (and a read or write of the terminal from the background)
	// stops the command, not the guard: it keeps the command's deadline
	// while the job is stopped, and tells dlm, which stops itself so that
	// the shell gets its prompt back (guarded, in lock.go).
	jobSigs := make(chan os.Signal, 8)
	signal.Notify(jobSigs, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	var ready *os.File // tells dlm that the command is in the group, and of its stops
	var rst syscall.Stat_t
	if syscall.Fstat(guardReadyFD, &rst) == nil && rst.Mode&syscall.S_IFMT == syscall.S_IFIFO {
		syscall.CloseOnExec(guardReadyFD)
		ready = os.NewFile(guardReadyFD, "dlm-lock-ready")
		defer ready.Close() // the end of the pipe tells dlm too, if the command never starts
	}
	report := func(b ...byte) {
		if ready != nil {
			_, _ = ready.Write(b) // one write: the sentinel may write on this pipe too
		}
	}
	deadlines := make(chan guardDeadline, 1)
	go readDeadlines(pipe, deadlines)
	// The first deadline comes before the command starts: without it (dlm
	// died already) nothing runs.
	first, ok := <-deadlines
	if !ok || (parent != 0 && os.Getppid() != parent) {
		return withCode(exitLockLost, nil)
	}
	killTimer := newKillTimer()
	killTimer.arm(first.hard)
	becomeReaper()
	// The kill at the deadline must not wait for a CPU behind the load:
	// the guard's threads get the most favoured nice value where the
	// kernel allows it, the command dlm's own (startAtNice below).
	nice, favoured := preferScheduling()

	// The parent-death signal of the command is tied to this thread, and
	// so are the capabilities it starts with (enterNamespaces).
	runtime.LockOSThread()
	if err := enterNamespaces(iso); err != nil {
		fmt.Fprintf(stderr, "dlm %s: %v: the command was not run\n", guardCmdName, err)
		return withCode(127, nil)
	}
	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.SysProcAttr = childAttr()
	// A signal sent to the group before the command is in it (Ctrl-C
	// reaches the guard's group; dlm itself holds what it gets until the
	// command started) was meant for the command: the command is not
	// started, and the guard exits as the command would have.
	if sig, ok := earlySignal(ctx, sigs); ok {
		if parent != 0 && os.Getppid() != parent { // our parent-death signal
			return withCode(exitLockLost, nil)
		}
		fmt.Fprintf(stderr, "dlm lock: %v received before the command started: the command was not run\n", sig)
		return withCode(128+int(sig), nil)
	}
	start := child.Start
	if favoured {
		start = func() error { return startAtNice(nice, child.Start) }
	}
	if err := start(); err != nil {
		fmt.Fprintf(stderr, "dlm lock: start %q: %v\n", argv[0], err)
		return withCode(startCode(err), nil)
	}
	// dlm forwards the signals it gets to the group from now on, when
	// they reach the command (before, they would reach only the guard, or
	// nothing: the first process of a PID namespace drops the signals its
	// runtime does not handle yet).
	report(reportReady)
	exited, reaped := make(chan syscall.WaitStatus, 1), make(chan struct{})
	stops := make(chan syscall.WaitStatus, 8)
	go reap(child.Process.Pid, exited, stops, reaped)
	stopped := false // the command is stopped: Ctrl-Z

	timer := time.NewTimer(untilMono(first.soft))
	defer timer.Stop()
	for {
		select {
		case <-sigs:
			if parent != 0 && os.Getppid() != parent { // our parent-death signal
				endFamily(reaped, true)
				return withCode(exitLockLost, nil)
			}
			// Otherwise the group's signal, meant for the command.
		case <-jobSigs:
		case ws := <-stops:
			stopped = ws.Stopped()
			if stopped {
				report(reportStopped, byte(ws.StopSignal()))
			}
		case d, ok := <-deadlines:
			if !ok { // dlm lock is gone: nothing holds the lock for us
				endFamily(reaped, true)
				return withCode(exitLockLost, nil)
			}
			killTimer.arm(d.hard)
			timer.Reset(untilMono(d.soft))
		case <-timer.C:
			// Killed first, said after: a write to the terminal or a pipe
			// can block (a full pipe nobody reads, a terminal paused with
			// Ctrl-S), and the kill must not wait for it.
			endFamily(reaped, true)
			if stopped {
				fmt.Fprintf(stderr, "dlm %s: the lock's validity ended while the job was stopped: the command was killed\n", guardCmdName)
			} else {
				fmt.Fprintf(stderr, "dlm %s: the lock's validity ended without an extension: the command was killed\n", guardCmdName)
			}
			return withCode(exitLockLost, nil)
		case ws := <-exited:
			// Whatever the command left running dies before dlm releases
			// the lock: nothing may run unprotected.
			endFamily(reaped, false)
			if ws.Signaled() {
				return withCode(128+int(ws.Signal()), nil)
			}
			if ws.ExitStatus() == 0 {
				return nil
			}
			return withCode(ws.ExitStatus(), nil)
		}
	}
}

// earlySignal returns the signal the guard got before it started the
// command, if any: one waiting in sigs, or the SIGINT or SIGTERM that
// ended ctx before sigs was watched.
func earlySignal(ctx context.Context, sigs <-chan os.Signal) (syscall.Signal, bool) {
	select {
	case s := <-sigs:
		if sig, ok := s.(syscall.Signal); ok {
			return sig, true
		}
	default:
	}
	if ctx.Err() == nil {
		return 0, false
	}
	if strings.Contains(fmt.Sprint(context.Cause(ctx)), "interrupt") {
		return syscall.SIGINT, true
	}
	return syscall.SIGTERM, true
}

// untilMono returns the time from now to the instant d of a deadline
// frame.
func untilMono(d int64) time.Duration {
	if d == noDeadline {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(max(0, d-monoNow()))
}

// reap waits for every child of the guard: the command, whose end it
// sends on exited and whose stops and continuations on stops (dropped
// when nobody reads them), and the orphans of the command that the guard
// adopted as subreaper or first process of a PID namespace. It closes
// reaped when the guard has no child left.
func reap(cmd int, exited, stops chan<- syscall.WaitStatus, reaped chan<- struct{}) {
	defer close(reaped)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WUNTRACED|unix.WCONTINUED, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil: // ECHILD: no child left
			return
		case pid == cmd && (ws.Exited() || ws.Signaled()):
			exited <- ws
		case pid == cmd && (ws.Stopped() || ws.Continued()):
			select {
			case stops <- ws:
			default:
			}
		}
	}
}

// endFamily kills every process of the command and returns once the
// guard has reaped all its children, re-sending SIGKILL while it waits: a
// process may fork until it is killed, and its orphans come to the guard.
// Where the guard cannot kill the family and live (outside Linux), it
// kills its whole group, itself included, when self is true, and else
// returns at once (dlm lock kills the group when the guard has exited).
func endFamily(reaped <-chan struct{}, self bool) {
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		if !killFamily() {
			if !self {
				return
			}
			_ = syscall.Kill(0, syscall.SIGKILL)
		}
		select {
		case <-reaped:
			return
		case <-time.After(wait):
		}
	}
}

// Exit codes of a command that could not be started, as shells give them.
const (
	exitCannotExecute = 126 // found, but not executable (permission, a directory, a bad format)
	exitNotFound      = 127 // not found
)

// startCode is the exit code of a command whose start failed with err:
// 127 when it was not found, 126 when it was found and could not be
// executed.
func startCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return exitNotFound
	}
	return exitCannotExecute
}
