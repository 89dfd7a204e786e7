package redlock_test

import (
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// nodeAdapter is one node adapter package, as the tests of the core see it: a
// way to dial a client from node URLs. The tests of client behaviour over
// real nodes run over every adapter (style rule 13): goredis blocks, a
// goroutine per node and request; rueidis is an AsyncNode, which
// takes the core's callback path (engine.go), the batches and the hand-off.
type nodeAdapter struct {
	name string
	dial func(urls []string, opts ...redlock.Option) (*redlock.Client, error)
}

// adapters returns every node adapter, each test's subtests in this order.
func adapters() []nodeAdapter {
	return []nodeAdapter{
		{"goredis", goredis.Dial},
		{"rueidis", rueidis.Dial},
	}
}

// eachAdapter runs body as one subtest per adapter, named after it.
func eachAdapter(t *testing.T, body func(t *testing.T, a nodeAdapter)) {
	t.Helper()
	for _, a := range adapters() {
		t.Run(a.name, func(t *testing.T) { body(t, a) })
	}
}

// eachAdapterParallel is eachAdapter with the adapters' subtests run at the
// same time (t.Parallel), for tests that mostly wait for ttls to pass: the
// suite then waits once instead of once per adapter. Each subtest has its
// own servers and clients.
func eachAdapterParallel(t *testing.T, body func(t *testing.T, a nodeAdapter)) {
	t.Helper()
	for _, a := range adapters() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			body(t, a)
		})
	}
}

// cluster starts n real redis-server masters and a client over them.
func cluster(t *testing.T, a nodeAdapter, n int, opts ...redlock.Option) (*redlocktest.Cluster, *redlock.Client) {
	t.Helper()
	cl := redlocktest.Start(t, n)
	return cl, dial(t, a, cl, opts...)
}

// dial returns a client over cl. Its node timeout defaults to 500ms rather
// than 50ms: these tests run under -race beside other packages on two cores,
// and only the tests about timeouts set it lower.
func dial(t *testing.T, a nodeAdapter, cl *redlocktest.Cluster, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	opts = append([]redlock.Option{redlock.WithNodeTimeout(500 * time.Millisecond)}, opts...)
	return dialURLs(t, a, cl.URLs(), opts...)
}

// dialURLs returns a client over urls, closed when the test ends.
func dialURLs(t *testing.T, a nodeAdapter, urls []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := a.dial(urls, opts...)
	if err != nil {
		t.Fatalf("%s.Dial: %v", a.name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
