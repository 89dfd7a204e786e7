package goredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// A client that has no ordered full-duplex autopipeline (here a one-shard
// Ring) is sent one pipeline per batch; the node still passes the
// conformance suite.
func TestConformanceWithoutStream(t *testing.T) {
	redlocktest.RunNodeConformance(t, func(t testing.TB, s *redlocktest.Server) redlock.Node {
		r := redis.NewRing(&redis.RingOptions{
			Addrs:                 map[string]string{"only": s.Addr()},
			MaxRetries:            -1,
			ContextTimeoutEnabled: true,
			DisableIdentity:       true,
			Protocol:              2,
		})
		t.Cleanup(func() { _ = r.Close() })
		return goredis.NewNode(r, s.Addr())
	})
}
