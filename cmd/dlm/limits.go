package main

import "time"

// Upper bounds of dlm's sizes and durations (issue 16, defect 7). A value
// over one is refused as bad usage (exit 64) with the limit in the message;
// they are listed in `dlm help`.
const (
	// maxLockTTL bounds every lock ttl (--ttl of dlm lock, bench, acquire, extend):
	// a holder that crashes blocks the resource for up to a ttl.
	maxLockTTL = 24 * time.Hour
	// maxNodeMaxTTL bounds dlm node --max-ttl: it must exceed the largest
	// ttl in use, so the largest allowed ttl plus an hour.
	maxNodeMaxTTL = maxLockTTL + time.Hour
	// maxRunTime bounds the length of a run: dlm bench --duration, --seq
	// and --contention, dlm demo --duration.
	maxRunTime = time.Hour
	// maxBenchGoroutines bounds dlm bench --goroutines (each value) and
	// --workers: each goroutine holds its own requests in flight.
	maxBenchGoroutines = 10000
)

const limitsHelp = `Limits (over one: exit 64):
  --ttl of lock, bench, acquire, extend  at most 24h
  --max-ttl of node                      at most 25h
  --duration, --seq, --contention        at most 1h (bench, demo)
  --goroutines, --workers of bench       at most 10000 each`

// overDuration returns a usage error when d is over max.
func overDuration(flag string, d, max time.Duration) error {
	if d > max {
		return usageErrorf("%s: %v is over the limit of %v", flag, d, max)
	}
	return nil
}

// overCount returns a usage error when n is over max.
func overCount(flag string, n, max int) error {
	if n > max {
		return usageErrorf("%s: %d is over the limit of %d", flag, n, max)
	}
	return nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
