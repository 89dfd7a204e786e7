//go:build race

package gotoolchain_test

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// childEnv marks the child process of
// TestRaceDetectorSurvivesTimersFiredAtOnceInABubble.
const childEnv = "DLM_GOTOOLCHAIN_CHILD"

// TestRaceDetectorSurvivesTimersFiredAtOnceInABubble runs, in a child
// process, 2,000 synctest bubbles whose goroutines wake at the same fake
// instant and each poll a timer channel whose time has passed while
// nobody waited on it. The runtime fires such a timer on the polling
// goroutine's thread. Go 1.26's race detector fires it under a race
// context that belongs to the bubble, not to the thread; after some
// hundreds of bubbles, with several threads, the process dies inside
// ThreadSanitizer (a SIGSEGV, or "CHECK failed"). It did in every one of
// 10 runs on go1.26.8, and in none on one thread. A fresh-clone run of
// the suite lost the whole ./redlock test binary that way. Go 1.27 fires
// the timer under the thread's own context, and passes; scripts/test.sh
// runs the tests on Go 1.27.3 when the machine's own Go is older.
func TestRaceDetectorSurvivesTimersFiredAtOnceInABubble(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("the child runs only TestTimersFiredAtOnceInABubble")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTimersFiredAtOnceInABubble$", "-test.count=10")
	// More threads than the machine's CPUs, so that two of them are
	// inside the race detector at once on a 2-core machine too.
	cmd.Env = append(os.Environ(), childEnv+"=1", "GOMAXPROCS=8")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the race detector of %s crashed on timers of one synctest bubble fired at once (%v); "+
			"run the tests on Go 1.27 or newer (scripts/test.sh fetches go1.27.3):\n%s",
			runtime.Version(), err, firstLines(out, 12))
	}
}

// TestTimersFiredAtOnceInABubble is the child's work (see
// TestRaceDetectorSurvivesTimersFiredAtOnceInABubble).
func TestTimersFiredAtOnceInABubble(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs as the child of TestRaceDetectorSurvivesTimersFiredAtOnceInABubble")
	}
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for range 50 {
						timer := time.NewTimer(time.Millisecond)
						time.Sleep(2 * time.Millisecond)
						select {
						case <-timer.C:
						default:
							t.Error("a timer whose time had passed did not fire when polled")
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// firstLines returns up to n lines of out, and the lines that name a
// crash, so that a failure shows why without pages of goroutine stacks.
func firstLines(out []byte, n int) string {
	var keep []string
	for i, line := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		if i < n || strings.Contains(line, "SIGSEGV") || strings.Contains(line, "ThreadSanitizer") ||
			strings.HasPrefix(line, "fatal error") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
