package main

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
)

// The sentinel: the guard's parent, outside its PID namespace.
//
// In a PID namespace the guard is the namespace's first process, and the
// kernel drops every signal that process sends itself, the SIGKILL of its
// own kernel timer included (killTimer): a guard stopped with dlm, as
// `pkill -STOP dlm` stops both, would keep the command running past the
// lock. So dlm lock starts the guard through a sentinel, `dlm lock-guard
// --sentinel`, which stays outside the namespace:
//
//   - It reads the deadline frames dlm sends it (its own pipe, descriptor
//     3) and keeps a kernel timer armed at the end of the validity that
//     sends it SIGKILL: the kernel delivers it to a stopped process too.
//   - It starts the guard in the namespaces (the first the kernel allows,
//     guardIsolations) with SIGKILL as the guard's parent-death signal,
//     which the kernel delivers to a namespace's first process because it
//     comes from outside, stopped or not: when the sentinel dies, by its
//     timer or any other way, the guard dies, and with it every process in
//     the namespace. Its own parent-death signal (from dlm) is SIGKILL too.
//   - It leads the command's process group, and catches and ignores the
//     signals the group gets (they are the command's; Ctrl-Z stops the
//     command, not the sentinel), and exits as the guard did.
//
// The guard reads its own deadline pipe from dlm (descriptor 5 of the
// sentinel, passed on as its 3), and writes its reports to dlm's report
// pipe (descriptor 4 of both); the sentinel writes there first whether
// the kernel gave the guard its namespace (reportIsolated) or not
// (reportRefused with the errno), and then exits 71.

// guardSentinelFlag is the first argument of the guard's sentinel.
const guardSentinelFlag = "--sentinel"

// guardInnerFD is the sentinel's descriptor of the guard's deadline pipe,
// passed on to the guard as its guardFD.
const guardInnerFD = 5

// Reports on the report pipe (descriptor 4), from the guard and its
// sentinel to dlm lock, one write each.
const (
	// reportReady: the command is in the guard's group (from the guard).
	reportReady byte = 1
	// reportStopped, then the signal's number: the command was stopped by
	// that signal (from the guard).
	reportStopped byte = 2
	// reportIsolated, then the guard's pid (4 bytes, big-endian): the
	// guard runs in its namespaces (from the sentinel, before the guard
	// reports anything). Should the sentinel be killed, dlm, which
	// adopts the guard then, waits for the namespace to empty before it
	// releases the lock (waitAdopted).
	reportIsolated byte = 3
	// reportRefused, then the errno: the kernel allowed the guard no
	// namespace, and the command was not run (from the sentinel).
	reportRefused byte = 4
)

// isPipe reports whether descriptor fd is open on a pipe.
func isPipe(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
}

// runSentinel runs the guard of argv in the namespaces the kernel allows,
// as described above, and exits as it did: with its exit code, or 128+N
// when signal N killed it.
func runSentinel(argv []string) error {
	for _, fd := range []int{guardFD, guardReadyFD, guardInnerFD} {
		if !isPipe(fd) {
			return usageErrorf("%s %s is started by dlm lock, not by hand (descriptor %d is not its pipe)", guardCmdName, guardSentinelFlag, fd)
		}
		syscall.CloseOnExec(fd) // the guard gets what ExtraFiles names, no more
	}
	pipe := os.NewFile(guardFD, "dlm-lock-pipe")
	reports := os.NewFile(guardReadyFD, "dlm-lock-reports")
	inner := os.NewFile(guardInnerFD, "dlm-lock-guard-pipe")

	// The group's signals are the command's: caught, so that the
	// sentinel neither dies nor stops of them.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)

	deadlines := make(chan guardDeadline, 1)
	go readDeadlines(pipe, deadlines)
	first, ok := <-deadlines
	if !ok { // dlm died before the command could start
		return withCode(exitLockLost, nil)
	}
	timer := newKillTimer()
	timer.arm(first.hard)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The guard's parent-death signal comes when the thread that forked
	// it ends: this goroutine keeps the thread until the sentinel exits.
	runtime.LockOSThread()
	var guard *exec.Cmd
	err = errors.New("no namespace on this system")
	for _, iso := range guardIsolations() {
		guard = exec.Command(self, guardArgs(iso, argv)...)
		guard.Stdin, guard.Stdout, guard.Stderr = os.Stdin, os.Stdout, os.Stderr
		guard.ExtraFiles = []*os.File{inner, reports} // the guard's 3 and 4
		guard.SysProcAttr = namespaceAttr(iso)
		if err = guard.Start(); err == nil {
			break
		}
	}
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) || errno > 255 {
			errno = syscall.EPERM
		}
		_, _ = reports.Write([]byte{reportRefused, byte(errno)})
		return withCode(exitOSErr, nil)
	}
	// The sentinel's exit is the first step of the kernel's kill (its
	// timer), so it gets the most favoured nice value where the kernel
	// allows it; after the guard started, which keeps dlm's (it raises
	// its own where it may, and starts the command at dlm's).
	preferScheduling()
	_, _ = reports.Write(binary.BigEndian.AppendUint32([]byte{reportIsolated}, uint32(guard.Process.Pid)))
	reports.Close()
	inner.Close()

	exited := make(chan error, 1)
	go func() { exited <- guard.Wait() }()
	for {
		select {
		case <-sigs:
		case d, ok := <-deadlines:
			if !ok { // dlm is gone (its parent-death signal kills us too)
				_ = guard.Process.Kill()
				<-exited
				return withCode(exitLockLost, nil)
			}
			timer.arm(d.hard)
		case err := <-exited:
			return childExit(err)
		}
	}
}
