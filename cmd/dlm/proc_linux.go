package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// groupAttr is how dlm lock starts the first process of the command's
// family (its guard, or the guard's sentinel): leader of a new process
// group, with pdeath as parent-death signal. fg >= 0 makes the group the
// foreground group of the terminal fg.
func groupAttr(fg int, pdeath syscall.Signal) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: pdeath}
	if fg >= 0 {
		a.Foreground, a.Ctty = true, fg
	}
	return a
}

// namespaceAttr is how the sentinel (lock_sentinel.go) starts the guard:
// in the sentinel's group, the first process of a new PID namespace
// (lock_guard.go), which a new user namespace owns for a caller without
// the privilege to create one alone (iso), with SIGKILL as parent-death
// signal. The kernel delivers that signal to the first process of a PID
// namespace because it comes from outside the namespace, even to a
// stopped guard: when the sentinel dies, however it died, the namespace
// and everything in it die with the guard.
func namespaceAttr(iso isolation) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	switch iso {
	case isolatePID:
		// A mount namespace too, for the namespace's own /proc
		// (privateProc).
		a.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	case isolateUserPID:
		// The caller's own uid and gid, mapped to themselves: inside, the
		// command is the same user (files, $UID, permissions), and has no
		// privilege the caller lacks. setgroups stays denied, as the
		// kernel requires of an unprivileged gid map. The guard keeps
		// CAP_SYS_ADMIN of the new user namespace across its exec (an
		// ambient capability; a non-root uid loses every other) to mount
		// the namespace's /proc, and drops it before it starts the
		// command (dropCapabilities).
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return a
}

// guardIsolations are the namespaces dlm lock asks for its guard, in
// order: a PID namespace alone (root, or CAP_SYS_ADMIN), then one owned by
// a new user namespace (any user, where the kernel allows unprivileged
// user namespaces: user.max_user_namespaces above 0, no distribution
// restriction). The kernel refuses what it does not allow when the guard
// is started, and the sentinel (lock_sentinel.go) tries the next; where it
// allows none, dlm lock refuses to run the command unless told to run
// without a namespace.
func guardIsolations() []isolation { return []isolation{isolatePID, isolateUserPID} }

// enterNamespaces readies the namespaces dlm lock started the guard in
// (iso) for the command, on the thread that will start it: the PID
// namespace's own /proc (privateProc), and, in a user namespace, no
// capability left for the command (dropCapabilities). An error means the
// command must not run.
func enterNamespaces(iso isolation) error {
	if iso == isolateNone {
		return nil
	}
	if os.Getpid() == 1 { // the first process of the new PID namespace, as it must be
		// Best effort: where the kernel refuses the mount (a container
		// that masks parts of /proc), the command sees the system's /proc.
		_ = privateProc()
	}
	if iso == isolateUserPID {
		if err := dropCapabilities(); err != nil {
			return fmt.Errorf("drop the capabilities of the user namespace before starting the command: %w", err)
		}
	}
	return nil
}

// privateProc mounts a /proc of the guard's PID namespace over /proc in
// its mount namespace, so that ps, pgrep and top in the command find its
// processes by the pids it knows ($$, $!). The mount namespace is a copy
// of dlm's; the /proc copied into it is made private first, so that the
// new mount propagates to no other namespace, whatever the propagation of
// the system's mounts (the rest keeps it: a root command's own mounts
// reach the system where / is shared, as they do without a namespace). It
// lasts as long as the namespace: the kernel drops it with the last
// process of the command.
func privateProc() error {
	if err := unix.Mount("", "/proc", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make /proc private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount the namespace's /proc: %w", err)
	}
	return nil
}

// dropCapabilities clears every capability of the calling thread, the
// ambient ones included, so that a command it starts gets none: in the
// user namespace, the guard holds CAP_SYS_ADMIN (guardAttr). Capabilities
// belong to a thread; the guard starts the command from this one
// (runtime.LockOSThread in runGuard).
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	var none [2]unix.CapUserData
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &none[0]); err != nil {
		return fmt.Errorf("clear the capabilities: %w", err)
	}
	return nil
}

// childAttr is how dlm starts a process that must not outlive it (the
// guard its command, dlm generals a general's process): in dlm's group,
// killed (SIGKILL, its parent-death signal) when the thread that started
// it ends, and so when dlm dies, however it died. Keep the starting
// goroutine on its thread (runtime.LockOSThread) while the child lives.
func childAttr() *syscall.SysProcAttr {
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

// killTimer is a POSIX timer of the guard on CLOCK_MONOTONIC that sends
// the guard SIGKILL when it expires: the kernel's end of a command whose
// guard is stopped or starved at the end of the lock's validity. A stopped
// process gets SIGKILL too, and a killed one never runs again. The zero
// killTimer (no timer) does nothing.
type killTimer struct {
	id int32
	ok bool
}

// sigevent is struct sigevent of the kernel (64 bytes) as timer_create
// reads it for SIGEV_SIGNAL: the value, the signal, the notification.
type sigevent struct {
	value  uint64
	signo  int32
	notify int32
	_      [48]byte
}

// sigevSignal is SIGEV_SIGNAL: the timer sends the process a signal.
const sigevSignal = 0

// newKillTimer creates the guard's kill timer, disarmed. Where the guard
// is the first process of a PID namespace, the kernel drops the signals
// that process sends itself, SIGKILL included: there is no timer then.
func newKillTimer() *killTimer {
	if os.Getpid() == 1 {
		return &killTimer{}
	}
	ev := sigevent{signo: int32(syscall.SIGKILL), notify: sigevSignal}
	var id int32
	if _, _, e := unix.Syscall(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC,
		uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&id))); e != 0 {
		return &killTimer{} // the soft deadline holds alone
	}
	return &killTimer{id: id, ok: true}
}

// arm sets the timer to kill the guard at the instant at
// (CLOCK_MONOTONIC, nanoseconds), replacing any earlier setting; noDeadline
// disarms it.
func (k *killTimer) arm(at int64) {
	if !k.ok {
		return
	}
	var spec unix.ItimerSpec // zero: disarmed
	if at != noDeadline {
		spec.Value = unix.NsecToTimespec(max(at, 1))
	}
	_, _, _ = unix.Syscall6(unix.SYS_TIMER_SETTIME, uintptr(k.id), unix.TIMER_ABSTIME,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}

// adoptOrphans makes dlm lock the reaper of its orphaned descendants: a
// guard whose sentinel was killed comes to dlm, which waits for it
// (waitAdopted) before it releases the lock.
func adoptOrphans() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// waitAdopted waits until the process pid, a guard that dlm adopted, has
// ended, and reaps it; it returns at once when pid is not dlm's child (its
// sentinel reaped it). The first process of a PID namespace ends only
// once every other process of the namespace has.
func waitAdopted(pid int) {
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// groupStopped reports whether a process of the group pgid is stopped
// now: whether the command, whose stop the guard reported, has not been
// continued since.
func groupStopped(pgid int) bool {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range dir {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) STATE PPID PGRP ...: the fields follow the last ')'.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] == "T" {
			return true
		}
	}
	return false
}

// killerNice is the nice value of the guard and its sentinel where the
// kernel allows it (root, CAP_SYS_NICE, or an RLIMIT_NICE that reaches
// it): the most favoured. Both sleep almost all the time; what they do
// when they wake is kill the command at the end of the lock's validity,
// and the kernel's own kill (their timers) ends in their exits. On a
// loaded machine a task of ordinary priority can wait hundreds of
// milliseconds for a CPU, longer than the guard's margin: the kill must
// not wait behind the load it is there to outlast. The command runs at
// dlm's own nice value (startAtNice).
const killerNice = -20

// preferScheduling gives every thread of this process the nice value
// killerNice where the kernel allows it, and returns the nice value the
// process had (that of dlm, for the command) and whether it changed. On
// Linux a nice value belongs to a thread, and a new thread starts with its
// creator's: the threads are set until a pass finds none left at another
// value.
func preferScheduling() (orig int, ok bool) {
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, 0) // 20 - nice of this thread
	if err != nil {
		return 0, false
	}
	orig = 20 - raw
	if orig <= killerNice {
		return orig, false
	}
	for pass := 0; pass < 10; pass++ {
		dir, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return orig, pass > 0
		}
		changed := false
		for _, e := range dir {
			tid := ownTID(e.Name())
			if tid == 0 {
				continue
			}
			if p, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err == nil && 20-p == killerNice {
				continue
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, killerNice); err != nil {
				if pass == 0 && !changed {
					return orig, false // not allowed: nothing changed
				}
				continue // a thread that ended meanwhile
			}
			changed = true
		}
		if !changed {
			return orig, true
		}
	}
	return orig, true
}

// ownTID returns the id, in this process's PID namespace, of its thread
// that /proc/self/task lists as name (0 when it is gone): /proc may be
// the mount of another namespace (the guard's parent's, before it mounts
// its own), where the ids differ; NSpid lists them all, ours last.
func ownTID(name string) int {
	b, err := os.ReadFile("/proc/self/task/" + name + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if ids, ok := strings.CutPrefix(line, "NSpid:"); ok {
			if f := strings.Fields(ids); len(f) > 0 {
				tid, _ := strconv.Atoi(f[len(f)-1])
				return tid
			}
		}
	}
	tid, _ := strconv.Atoi(name) // a kernel without NSpid: one namespace
	return tid
}

// startAtNice runs start (which forks the command) with the calling
// thread at nice value n, so that the command starts with it, and puts
// the thread back at killerNice after. The caller keeps its goroutine on
// its thread (runtime.LockOSThread).
func startAtNice(n int, start func() error) error {
	tid := unix.Gettid()
	_ = unix.Setpriority(unix.PRIO_PROCESS, tid, n)
	err := start()
	_ = unix.Setpriority(unix.PRIO_PROCESS, tid, killerNice) // refused without the privilege: this thread stays at n
	return err
}
