package redlock

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestPooledTimerNoStaleTick checks that a timer of the client's pool
// (rto.timer, rto.putTimer) never hands a tick of an earlier wait to the
// next: a fan's wait that received one would time its nodes out at once.
// With Go 1.23's timers, Stop guarantees it; a program that runs with
// GODEBUG=asynctimerchan=1 (a //go:debug line, or the environment) has the
// old timers, whose channel keeps a tick that came before Stop. The test
// runs itself again with that setting. Seen failing before putTimer
// drained the channel: "a stale tick".
func TestPooledTimerNoStaleTick(t *testing.T) {
	if os.Getenv("DLM_TIMERPOOL_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPooledTimerNoStaleTick$", "-test.count=1")
		cmd.Env = append(os.Environ(), "DLM_TIMERPOOL_CHILD=1", "GODEBUG=asynctimerchan=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("with GODEBUG=asynctimerchan=1: %v\n%s", err, out)
		}
	}
	var r rto
	tm := r.timer(time.Microsecond)
	// Wait for the tick to be sent on the channel (old timers buffer it;
	// new ones send on receive, so the first select takes it).
	deadline := time.Now().Add(10 * time.Second)
	for len(tm.C) == 0 && time.Now().Before(deadline) && os.Getenv("DLM_TIMERPOOL_CHILD") != "" {
		time.Sleep(time.Millisecond) // polling, bounded by the deadline
	}
	r.putTimer(tm) // a wait that ended before its timer's tick was read
	tm = r.timer(time.Hour)
	defer r.putTimer(tm)
	select {
	case <-tm.C:
		t.Fatal("a stale tick: the next wait's timer fired at once instead of after an hour")
	default:
	}
}
