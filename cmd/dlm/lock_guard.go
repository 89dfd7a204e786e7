package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"
)

// guardCmdName is the hidden subcommand that dlm lock starts between itself
// and the user's command: `dlm lock` -> `dlm lock-guard` -> COMMAND.
const guardCmdName = "lock-guard"

// guardFD is the descriptor on which the guard reads the pipe from dlm
// lock: it reads end-of-file when dlm lock has died, however it died.
const guardFD = 3

// A child that cannot outlive its lock (issue 16, defects 1 to 3).
//
// dlm lock starts the guard as the leader of a new process group (the
// terminal's foreground group when dlm itself is in the foreground), and
// the guard starts the command in that group; every process the command
// starts stays in it unless it leaves on purpose (setsid, setpgid). Then:
//
//   - dlm lock signals the whole group: SIGTERM on a lost lock, SIGKILL
//     after --grace, the forwarded SIGINT, SIGTERM, SIGHUP and SIGQUIT; and
//     after the command exits, SIGKILL to whatever it left running, before
//     the lock is released.
//   - If dlm lock dies, even by SIGKILL, the guard notices and SIGKILLs the
//     group: its pipe from dlm (descriptor 3) reads end-of-file as soon as
//     the kernel closes dlm's end, on every Unix. On Linux the guard also
//     gets a parent-death signal (SIGTERM, checked against getppid so that
//     the death of the forking thread alone does nothing), and the command
//     gets SIGKILL as its parent-death signal should the guard itself be
//     killed. A dlm lock that dies between fork and prctl is covered twice:
//     Go's runtime re-checks the parent after prctl, and the pipe is
//     already closed.
//   - A terminal's Ctrl-C reaches the foreground group: the command once;
//     dlm, not in that group, forwards nothing. When dlm is not in the
//     terminal's foreground group (a script, a pipe), dlm receives the
//     signal alone and forwards it once.
//
// The guard catches the signals the group receives and ignores them itself
// (caught, not ignored: an ignored signal would stay ignored in the
// command after exec).

// newLockGuardCmd builds the hidden "dlm lock-guard -- COMMAND [ARGS...]".
func newLockGuardCmd() *cobra.Command {
	return &cobra.Command{
		Use:                guardCmdName + " -- COMMAND [ARGS...]",
		Short:              "Internal: the process dlm lock puts between itself and the command",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] == "--" {
				args = args[1:]
			}
			if len(args) == 0 {
				return usageErrorf("%s is started by dlm lock, not by hand", guardCmdName)
			}
			return runGuard(args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
}

// runGuard runs argv in the guard's process group and exits with its
// status; it kills the group when dlm lock dies.
func runGuard(argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	parent := os.Getppid()
	pipe := os.NewFile(guardFD, "dlm-lock-pipe")
	var st syscall.Stat_t
	if pipe == nil || syscall.Fstat(guardFD, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return usageErrorf("%s is started by dlm lock, not by hand (descriptor %d is not its pipe)", guardCmdName, guardFD)
	}
	syscall.CloseOnExec(guardFD) // the command must not hold dlm's pipe
	killGroup := func() { _ = syscall.Kill(0, syscall.SIGKILL) }

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if os.Getppid() != parent {
		killGroup()
	}
	go func() {
		var b [1]byte
		for {
			if _, err := pipe.Read(b[:]); err != nil {
				killGroup() // dlm lock is gone: nothing holds the lock for us
				return
			}
		}
	}()

	// The parent-death signal of the command is tied to this thread.
	runtime.LockOSThread()
	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = stdin, stdout, stderr
	child.SysProcAttr = commandAttr()
	if err := child.Start(); err != nil {
		fmt.Fprintf(stderr, "dlm lock: start %q: %v\n", argv[0], err)
		return withCode(127, nil)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	for {
		select {
		case <-sigs:
			if os.Getppid() != parent { // our parent-death signal
				killGroup()
			}
			// Otherwise the group's signal, meant for the command.
		case err := <-exited:
			if err == nil {
				return nil
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return withCode(128+int(ws.Signal()), nil)
				}
				return withCode(ee.ExitCode(), nil)
			}
			return err
		}
	}
}
