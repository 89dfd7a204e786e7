//go:build !linux

package main

import "syscall"

// groupAttr is how dlm lock starts its guard: leader of a new process
// group. There is no parent-death signal outside Linux: the guard learns
// of dlm's death from its pipe alone. fg >= 0 makes the group the
// foreground group of the terminal fg.
func groupAttr(fg int, _ syscall.Signal) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if fg >= 0 {
		a.Foreground, a.Ctty = true, fg
	}
	return a
}

// namespaceAttr is never used outside Linux (guardIsolations is empty).
func namespaceAttr(isolation) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// guardIsolations is empty: no namespaces outside Linux.
func guardIsolations() []isolation { return nil }

// enterNamespaces does nothing: no namespaces outside Linux.
func enterNamespaces(isolation) error { return nil }

// childAttr is how dlm starts a process that must not outlive it (the
// guard its command, dlm generals a general's process): in dlm's group.
// There is no parent-death signal outside Linux: such a child learns of
// its parent's death from the end of a pipe from it, and a command whose
// guard alone is killed (dlm lock still running) is stopped by dlm lock,
// which signals the group when the guard exits.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// becomeReaper does nothing outside Linux: the command's orphans go to
// init, out of the guard's reach once they leave its group.
func becomeReaper() {}

// killFamily reports false: outside Linux the guard cannot find every
// process of the command, and kills its group (itself included) instead.
func killFamily() bool { return false }

// killTimer does nothing outside Linux: the guard's own deadline holds
// alone.
type killTimer struct{}

// newKillTimer returns a killTimer that does nothing.
func newKillTimer() *killTimer { return &killTimer{} }

// arm does nothing.
func (*killTimer) arm(int64) {}

// adoptOrphans does nothing outside Linux: there is no sentinel.
func adoptOrphans() {}

// waitAdopted does nothing outside Linux: there is no sentinel.
func waitAdopted(int) {}

// groupStopped reports true outside Linux: every stop the guard reports
// is taken as current.
func groupStopped(int) bool { return true }

// preferScheduling does nothing outside Linux: the guard keeps dlm's
// priority.
func preferScheduling() (int, bool) { return 0, false }

// startAtNice runs start.
func startAtNice(_ int, start func() error) error { return start() }
