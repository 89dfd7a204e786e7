package rueidis_test

import (
	"testing"

	"go.uber.org/goleak"
)

// rueidis' cluster client closes the connections a topology refresh
// dropped five seconds later and delays a refresh after a failure, each on
// a goroutine of its own that its Close does not wait for: bounded, and
// not ours. The connection such a goroutine is about to close still runs
// its pipe (its reader and writer goroutines) until then: seen once in a
// fresh clone's make test after the cluster tests. A redirection to the
// connection that was redirected closes that one five seconds later, on
// a goroutine of its own too.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient).redirectOrNew.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*pipe)._background"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*pipe)._backgroundWrite"))
}
