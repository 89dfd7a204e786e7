package main

import (
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
