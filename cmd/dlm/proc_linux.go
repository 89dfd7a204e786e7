package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// guardAttr is how dlm lock starts its guard: leader of a new process
// group, with SIGTERM as parent-death signal (the guard checks getppid
// before acting on it), and with pidns the first process of a new PID
// namespace (lock_guard.go). fg >= 0 makes the group the foreground group
// of the terminal fg.
func guardAttr(fg int, pidns bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if pidns {
		a.Cloneflags = syscall.CLONE_NEWPID
	}
	if fg >= 0 {
		a.Foreground, a.Ctty = true, fg
	}
	return a
}

// pidNamespaces reports whether guardAttr can ask for a PID namespace on
// this system (dlm lock falls back to none when the kernel refuses).
const pidNamespaces = true

// commandAttr is how the guard starts the command: in the guard's group,
// killed if the guard dies.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// becomeReaper makes the guard the reaper of the command's orphans, so
// that killFamily finds a process that left the group (the first process
// of a PID namespace is one already).
func becomeReaper() {
	if os.Getpid() != 1 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
}

// killFamily sends SIGKILL to every process of the command, the guard
// excepted: in a PID namespace, every other process of it; else every
// other process of the guard's group and every child of the guard (the
// orphans it adopted as subreaper). It reports true: on Linux the guard
// can do this and live.
func killFamily() bool {
	self := os.Getpid()
	if self == 1 {
		_ = syscall.Kill(-1, syscall.SIGKILL)
		return true
	}
	pgid := syscall.Getpgrp()
	dir, err := os.ReadDir("/proc")
	if err != nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // no /proc: the group, the guard with it
		return true
	}
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) STATE PPID PGRP ...: the fields follow the last ')'.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		if ppid == self || pgrp == pgid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return true
}
