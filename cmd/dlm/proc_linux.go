package main

import "syscall"

// guardAttr is how dlm lock starts its guard: leader of a new process
// group, with SIGTERM as parent-death signal (the guard checks getppid
// before acting on it). fg >= 0 makes the group the foreground group of
// the terminal fg.
func guardAttr(fg int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if fg >= 0 {
		a.Foreground, a.Ctty = true, fg
	}
	return a
}

// commandAttr is how the guard starts the command: in the guard's group,
// killed if the guard dies.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
