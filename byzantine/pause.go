package byzantine

import (
	"sync"
	"time"
)

// PauseReporter is an optional capability of an Endpoint: it says whether
// the general's process was stopped (SIGSTOP, a machine that did not run it)
// for the whole of the span from from to to. A transport stamps arrivals
// (Inbound.At) when it reads them, so a process that was not running in the
// last part of a round, up to its deadline, stamps what its peers sent in
// time as late: RunGeneral then lists the round in GeneralResult.Overran.
// When the endpoint does not implement it, RunGeneral watches the process
// itself with a ticker.
type PauseReporter interface {
	Paused(from, to time.Time) bool
}

// maxPauses bounds the pauses a pauseWatch remembers.
const maxPauses = 1024

// pauseWatch records the spans in which its ticker could not run: gaps
// between ticks longer than half the slack.
type pauseWatch struct {
	done chan struct{}
	tick time.Duration
	wg   sync.WaitGroup
	mu   sync.Mutex
	last time.Time // the last tick
	gaps [][2]time.Time
}

// watchPauses starts a pauseWatch ticking at a quarter of slack: it records
// gaps longer than half the slack.
func watchPauses(slack time.Duration) *pauseWatch {
	tick := max(slack/4, time.Millisecond)
	w := &pauseWatch{done: make(chan struct{}), tick: tick, last: time.Now()}
	w.wg.Go(func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
			}
			now := time.Now()
			w.mu.Lock()
			if now.Sub(w.last) > 2*tick {
				if len(w.gaps) == maxPauses {
					w.gaps = w.gaps[1:]
				}
				w.gaps = append(w.gaps, [2]time.Time{w.last, now})
			}
			w.last = now
			w.mu.Unlock()
		}
	})
	return w
}

// Paused reports whether a recorded gap, or the one under way (the ticker
// has not run for too long), covers the whole of [from, to].
func (w *pauseWatch) Paused(from, to time.Time) bool {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.last) > 2*w.tick && w.last.Before(from) && !now.Before(to) {
		return true
	}
	for _, g := range w.gaps {
		if g[0].Before(from) && !g[1].Before(to) {
			return true
		}
	}
	return false
}

func (w *pauseWatch) stop() {
	close(w.done)
	w.wg.Wait()
}
