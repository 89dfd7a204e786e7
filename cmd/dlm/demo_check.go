package main

import (
	"fmt"
	"time"

	"dlm/checker"
)

// holdWindow is the time during which one worker believed it held the
// lock: from the moment its acquisition returned to the moment it began to
// release (or its validity ran out, if that came first: R6).
type holdWindow struct {
	Worker     int
	Start, End time.Time
}

// demoHistory records the demo's hold windows as a checker history, on
// the clock of t0 (the demo's start): each window is an acquisition that
// completed at the window's start and was valid until its end, so that the
// checker's mutual-exclusion check judges the demo as it judges any run.
func demoHistory(t0 time.Time, nodes int, ws []holdWindow) *checker.History {
	h := &checker.History{Nodes: nodes, Ops: make([]checker.Op, 0, len(ws))}
	for i, w := range ws {
		start, end := int64(w.Start.Sub(t0)), int64(w.End.Sub(t0))
		h.Ops = append(h.Ops, checker.Op{
			ID: i, Client: fmt.Sprintf("worker-%d", w.Worker+1), Resource: demoResource, Kind: checker.Acquire,
			Lock: fmt.Sprintf("grant-%d", i), Start: start, End: start, OK: true, TTL: end - start, Until: end,
		})
	}
	return h
}

// checkExclusion judges the windows with the checker's mutual-exclusion
// check (checker.CheckMutex, R1.1): ok when no two holders' windows
// intersect, else the checker's counterexample.
func checkExclusion(t0 time.Time, nodes int, ws []holdWindow) checker.Result {
	return checker.CheckMutex(demoHistory(t0, nodes, ws))
}
