package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// The tests' binary doubles as the program's children (startChild runs
// os.Executable), as the program does.
func TestMain(m *testing.M) {
	if isChild, err := runChild(os.Stdin, os.Stdout); isChild {
		if err != nil {
			os.Stderr.WriteString("bench child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A spinner uses CPU until stopped, and is gone after.
func TestSpinners(t *testing.T) {
	s, err := startSpinners(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	deadline := time.Now().Add(10 * time.Second)
	for s.cpu() < 50*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("the spinner used %v of CPU in 10s", s.cpu())
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
	}
	pid := s[0].cmd.Process.Pid
	s.stop()
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("spinner %d still there after stop", pid)
	}
}

// A child with an unknown role says so.
func TestRunChildRefusesUnknownRole(t *testing.T) {
	t.Setenv(childEnv, "nope")
	if isChild, err := runChild(nil, nil); !isChild || err == nil {
		t.Errorf("runChild with %s=nope = %v, %v; want a child's error", childEnv, isChild, err)
	}
}

// lateTimer is a context whose deadline has passed while its timer has
// not run yet, as on a loaded machine: Err is nil.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

// A Lock call that failed on the run's deadline ends the worker and is no
// library giving up, also before the context's timer has run. In a loaded
// run across processes, all 37 of dlm's "gave up" were such calls (the
// deadline 6 ms behind, ctx.Err() still nil).
func TestRunEnded(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	late := lateTimer{context.Background(), time.Now().Add(-6 * time.Millisecond)}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"live, an error", context.Background(), errors.New("redlock: lock not acquired"), false},
		{"live, the deadline in the error", late, fmt.Errorf("redlock: lock not acquired: %w", context.DeadlineExceeded), true},
		{"ended", ended, errors.New("redlock: lock not acquired"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runEnded(tc.ctx, tc.err); got != tc.want {
				t.Errorf("runEnded = %v, want %v", got, tc.want)
			}
		})
	}
}
