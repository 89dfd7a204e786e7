package main

import (
	"fmt"
	"sort"
	"time"
)

// holdWindow is the time during which one worker believed it held the
// lock: from the moment its acquisition returned to the moment it began to
// release (or its validity ran out, if that came first: R6).
type holdWindow struct {
	Worker     int
	Start, End time.Time
}

// overlap is two windows that broke mutual exclusion (R1.1).
type overlap struct{ A, B holdWindow }

func (o overlap) String() string {
	return fmt.Sprintf("worker-%d held [%s, %s] while worker-%d held [%s, %s]",
		o.A.Worker+1, o.A.Start.Format("15:04:05.000"), o.A.End.Format("15:04:05.000"),
		o.B.Worker+1, o.B.Start.Format("15:04:05.000"), o.B.End.Format("15:04:05.000"))
}

// checkExclusion reports the first pair of hold windows that overlap, if
// any: mutual exclusion held iff no two holders' windows intersect. It is a
// pure function of the recorded windows (times from one process's
// monotonic clock).
func checkExclusion(ws []holdWindow) (overlap, bool) {
	s := append([]holdWindow(nil), ws...)
	sort.Slice(s, func(i, j int) bool { return s[i].Start.Before(s[j].Start) })
	far := 0 // the earlier window that reaches furthest
	for i := 1; i < len(s); i++ {
		if s[i].Start.Before(s[far].End) {
			return overlap{A: s[far], B: s[i]}, false
		}
		if s[i].End.After(s[far].End) {
			far = i
		}
	}
	return overlap{}, true
}
