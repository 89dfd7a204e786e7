package redlock_test

import (
	"testing"

	"go.uber.org/goleak"
)

// rueidis' cluster client closes the connections a topology refresh
// dropped five seconds later and delays a refresh after a failure, and
// go-redis' pool probes a master that refused its dials once a second
// until the pool is closed, each on a goroutine of its own that Close does
// not wait for: bounded, and not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, mainIgnores()...)
}

// mainIgnores are the goroutines TestMain's leak check leaves alone.
func mainIgnores() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
	}
}
