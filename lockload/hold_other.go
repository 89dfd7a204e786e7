//go:build !unix

package lockload

import "time"

// HoldBlocking is time.Sleep where no blocking nanosleep is at hand.
func HoldBlocking(d time.Duration) { time.Sleep(d) }
