package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"dlm/election"
)

// Upper bounds of dlm's sizes and durations. A value
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
	// maxLockResources bounds the resources of one lock (dlm lock, dlm
	// acquire): each node sets them all in one atomic step, during which it
	// serves nobody else, and a request that large cannot be answered
	// within any sensible node timeout.
	maxLockResources = 1000
	// maxNameBytes bounds a resource name (dlm lock, dlm acquire).
	maxNameBytes = 1024
	// minNodeTimeout is the least --node-timeout: no node answers sooner,
	// and under it every node would look unreachable (exit 69) for a
	// mistake in a flag.
	minNodeTimeout = time.Millisecond
)

const limitsHelp = `Limits (over one: exit 64):
  --ttl of lock, bench, acquire, extend  at most 24h
  --max-ttl of node                      at most 25h
  --duration, --seq, --contention        at most 1h (bench, demo)
  --goroutines, --workers of bench       at most 10000 each
  RESOURCE of lock, acquire              at most 1000 in one lock, each at most
                                         1024 bytes of printable UTF-8
  --node-timeout                         at least 1ms, and under the ttl
(Below a lower limit: exit 64 too.)`

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

// checkNodeTimeout refuses a node timeout under minNodeTimeout or not
// under the ttl (R8.2: it must be small compared to the ttl).
func checkNodeTimeout(nodeTO, ttl time.Duration) error {
	switch {
	case nodeTO < minNodeTimeout:
		return usageErrorf("--node-timeout %v is under the least of %v: no node answers that fast; give the time a node has to answer, well under --ttl %v", nodeTO, minNodeTimeout, ttl)
	case nodeTO >= ttl:
		return usageErrorf("--node-timeout must be well under the ttl %v, got %v", ttl, nodeTO)
	}
	return nil
}

// checkResources is the one check of the RESOURCE arguments of dlm lock
// and dlm acquire: at least one, at most maxLockResources, each a name as
// checkName wants it and not an election's leadership lock
// (election.ResourcePrefix), none given twice.
func checkResources(resources []string) error {
	if len(resources) == 0 {
		return usageErrorf("no RESOURCE: name the resource (or resources) to lock")
	}
	if len(resources) > maxLockResources {
		return usageErrorf("%d resources in one lock, over the limit of %d: lock fewer (or one resource that stands for the set)", len(resources), maxLockResources)
	}
	seen := make(map[string]bool, len(resources))
	for i, r := range resources {
		what := "RESOURCE"
		if len(resources) > 1 {
			what = fmt.Sprintf("RESOURCE %d of %d", i+1, len(resources))
		}
		if err := checkName(what, r); err != nil {
			return err
		}
		if e, ok := strings.CutPrefix(r, election.ResourcePrefix); ok {
			// The election e campaigns for this very lock: taking it
			// would block the election, and its fencing token would
			// pass for a leader's term.
			return usageErrorf("%s %q is election %q's leadership lock: use dlm elect %s to stand for it, or give the lock another name", what, r, e, strconv.Quote(e))
		}
		if seen[r] {
			return usageErrorf("RESOURCE %q is given twice: the resources of one lock must be distinct", r)
		}
		seen[r] = true
	}
	return nil
}

// namedResources reads the RESOURCE arguments of the commands that look at
// or release existing locks (dlm status, dlm release --force). A name
// that starts with a double quote is the quoted form that dlm status
// prints (Go syntax, as strconv.Quote writes it) for a name it cannot show
// as is: control characters, invalid UTF-8, a leading quote; it is read
// back to the name on the nodes. Any other name follows the rule of dlm
// lock (checkResources), and one it refuses is answered with the quoted
// form to give instead.
func namedResources(args []string) ([]string, error) {
	if len(args) > maxLockResources {
		return nil, usageErrorf("%d resources at once, over the limit of %d: name fewer at a time", len(args), maxLockResources)
	}
	names := make([]string, len(args))
	seen := make(map[string]bool, len(args))
	for i, a := range args {
		name := a
		if strings.HasPrefix(a, `"`) {
			u, err := strconv.Unquote(a)
			switch {
			case err != nil:
				return nil, usageErrorf("RESOURCE %s starts with a double quote, so it is read as the quoted form that dlm status prints (Go syntax, e.g. \"job\\x1b\"), and it is not one; quote the name for the shell too, e.g. '\"job\\x1b\"'", strconv.Quote(a))
			case u == "":
				return nil, usageErrorf("RESOURCE %s is the empty name: no lock has it", a)
			case len(u) > maxNameBytes:
				return nil, usageErrorf("RESOURCE %s is %d bytes long, over the limit of %d", a, len(u), maxNameBytes)
			case shownName(u) == u:
				// dlm status prints this name as is, never quoted: the
				// quotes are part of a name of its own (dlm lock takes
				// it so), not the quoted form of u.
				return nil, usageErrorf("RESOURCE %s is ambiguous: dlm status prints the lock %s without quotes, so give %s for it; the lock whose name holds the quotes is given as %s", a, u, u, strconv.Quote(a))
			}
			name = u
		} else if err := checkName("RESOURCE", a); err != nil {
			return nil, usageErrorf("%v; to name a resource that dlm status shows quoted, give its quoted form: %s", err, strconv.Quote(a))
		}
		if seen[name] {
			return nil, usageErrorf("RESOURCE %s is given twice", strconv.Quote(name))
		}
		seen[name] = true
		names[i] = name
	}
	return names, nil
}

// checkName refuses (exit 64) a name that dlm could not show, log or pass
// to a command unambiguously: empty, over maxNameBytes, not UTF-8, or with
// a character that is not printable (a newline, a tab, an escape), the
// rule election.CheckName applies to election names and candidate ids.
func checkName(what, name string) error {
	switch {
	case name == "":
		return usageErrorf("%s is empty: name the resource to lock", what)
	case len(name) > maxNameBytes:
		return usageErrorf("%s is %d bytes long, over the limit of %d", what, len(name), maxNameBytes)
	case !utf8.ValidString(name):
		return usageErrorf("%s %q is not valid UTF-8", what, name)
	}
	for i, r := range name {
		if !unicode.IsPrint(r) {
			return usageErrorf("%s %q has an unprintable character %U at byte %d: use printable characters", what, name, r, i)
		}
	}
	return nil
}
