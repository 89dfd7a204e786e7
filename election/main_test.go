package election_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests. go-redis's pool
// re-dials a killed node on a goroutine that sleeps a second between tries
// and sees its pool closed only then (TestElectionOverRedis kills nodes):
// that one is let go.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
