package tcp

import (
	"crypto/ed25519"
	"testing"

	"dlm/byzantine"
)

// TestAbsentGeneralIsAFault: one general of the cluster never comes up (its
// address refuses connections). It is a crash within m, which both
// algorithms tolerate: every live loyal general decides the commander's
// order, keeps the schedule and names the absent general among the faults
// it saw (regression: a peer that never connected was never marked gone,
// every send to it counted as lost, and every live general said it ran out
// of time).
func TestAbsentGeneralIsAFault(t *testing.T) {
	for _, alg := range []byzantine.Algorithm{byzantine.OM, byzantine.SM} {
		t.Run(string(alg), func(t *testing.T) {
			const n, m, absent = 5, 1, 3
			runWithOneOdd(t, alg, n, m, absent, func(keys []ed25519.PrivateKey) string {
				node := listenAt(t, "127.0.0.1:0", absent, keys[absent])
				node.Close() // its address now refuses connections
				return node.Addr()
			})
		})
	}
}
