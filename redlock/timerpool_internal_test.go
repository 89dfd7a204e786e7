package redlock

import (
	"go/version"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestPooledTimerNoStaleTick checks that a timer of the client's pool
// (rto.timer, rto.putTimer) never hands a tick of an earlier wait to the
// next: a fan's wait that received one would time its nodes out at once.
// With Go 1.23's timers, Stop guarantees it; a program that runs with
// GODEBUG=asynctimerchan=1 (a //go:debug line, or the environment) has the
// old timers, whose channel keeps a tick that came before Stop. The test
// runs itself again with that setting, on a Go that still has it: Go 1.27
// removed the setting (a program that sets it dies at start), and with it
// the old timers. Seen failing before putTimer drained the channel: "a
// stale tick".
func TestPooledTimerNoStaleTick(t *testing.T) {
	if os.Getenv("DLM_TIMERPOOL_CHILD") == "" && oldTimersExist(runtime.Version()) {
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

// oldTimersExist reports whether the Go named goVersion (runtime.Version)
// still has the timers of GODEBUG=asynctimerchan=1, removed in Go 1.27. A
// development version counts as new.
func oldTimersExist(goVersion string) bool {
	return version.IsValid(goVersion) && version.Compare(goVersion, "go1.27") < 0
}

func TestOldTimersExist(t *testing.T) {
	for v, want := range map[string]bool{
		"go1.26.8": true, "go1.26": true, "go1.27rc1": false, "go1.27.3": false,
		"go1.28.0": false, "devel go1.28-abcdef": false,
	} {
		if got := oldTimersExist(v); got != want {
			t.Errorf("oldTimersExist(%q) = %v, want %v", v, got, want)
		}
	}
}
