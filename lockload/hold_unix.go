//go:build unix

package lockload

import (
	"syscall"
	"time"
)

// HoldBlocking holds for d in one blocking nanosleep system call, as a
// critical section that blocks its thread (a synchronous write, say): its
// length does not depend on the runtime's timers (ContentionHeld). A
// duration of zero or less returns at once.
func HoldBlocking(d time.Duration) {
	if d <= 0 {
		return // nanosleep(0) would still sleep the thread's timer slack
	}
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
