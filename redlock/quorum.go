package redlock

import "time"

// decision is the state of a fan-out after some of its replies.
type decision int

const (
	undecided  decision = iota
	reached             // a quorum said yes
	impossible          // too many said no or failed for a quorum to be reached
)

// decide is the quorum rule of R8.3 as a pure function: with n nodes, a
// quorum of q, yes nodes that said yes and no nodes that said no or failed,
// the outcome is known as soon as yes >= q, or as soon as the nodes that may
// still say yes (n - no) are fewer than q. The client never waits for a
// straggler beyond that point (R15).
func decide(n, q, yes, no int) decision {
	switch {
	case yes >= q:
		return reached
	case n-no < q:
		return impossible
	}
	return undecided
}

// majority is the quorum of R8.3: at least n/2+1 of n nodes.
func majority(n int) int { return n/2 + 1 }

// drift is the clock drift compensation of R9: ttl x factor + 2 ms.
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + 2*time.Millisecond
}

// validity is MIN_VALIDITY of R9: ttl - elapsed - drift, where elapsed runs
// from before the first request (T1) to the deciding reply (T2). A lock is
// held only if it is positive (R8.3-4).
func validity(ttl, elapsed, drift time.Duration) time.Duration {
	return ttl - elapsed - drift
}
