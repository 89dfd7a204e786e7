package main

import (
	"testing"
	"time"

	"dlm/redlock"
)

// The guard's margin and the library's extensions agree: an extension of
// a kept lock lands with at least redlock.AutoExtendLead left, and the
// guard must learn the new end before its deadline, the margin before the
// old one: the margin and dlm's look for a new end (renewEvery, at its
// longest: a grant at no latency) fit in the lead, for every ttl.
func TestGuardMarginLeavesTimeForTheExtension(t *testing.T) {
	for _, ttl := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second, 2 * time.Second, 2500 * time.Millisecond, 3 * time.Second, 5 * time.Second, 10 * time.Second, time.Minute, time.Hour} {
		margin := guardMargin(ttl)
		look := renewEvery(ttl - margin)
		if lead := redlock.AutoExtendLead(ttl); margin+look >= lead {
			t.Errorf("ttl %v: guard margin %v + dlm's look every %v = %v, want under the extension lead %v", ttl, margin, look, margin+look, lead)
		}
	}
}
