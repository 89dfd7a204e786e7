package main

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// foregroundTTY returns the descriptor of in when it is a terminal whose
// foreground process group is dlm's own, else -1: only then may dlm hand
// the terminal to the command's group.
func foregroundTTY(in io.Reader) int {
	f, ok := in.(*os.File)
	if !ok {
		return -1
	}
	fd := int(f.Fd())
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pg != syscall.Getpgrp() {
		return -1
	}
	return fd
}

// takeTerminalBack makes dlm's process group the foreground group of the
// terminal fd again, after the command's group had it. SIGTTOU, which a
// background group gets for this, is ignored meanwhile.
func takeTerminalBack(fd int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, syscall.Getpgrp())
}

// giveTerminal makes the process group pgid the foreground group of the
// terminal fd (dlm's own group has it: fg continued dlm).
func giveTerminal(fd, pgid int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pgid)
}

// jobControl reports whether a shell with job control can continue dlm
// once it stops: dlm's parent is in dlm's session and in another process
// group. The kernel ignores Ctrl-Z in a group that has no such process
// (an orphaned group: a session leader, a child of a process of another
// session), where nobody would continue it.
func jobControl() bool {
	pp := os.Getppid()
	psid, err := unix.Getsid(pp)
	if err != nil {
		return false
	}
	sid, err := unix.Getsid(0)
	if err != nil {
		return false
	}
	ppg, err := unix.Getpgid(pp)
	return err == nil && psid == sid && ppg != syscall.Getpgrp()
}
