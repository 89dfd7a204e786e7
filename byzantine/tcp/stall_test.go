package tcp

import (
	"crypto/ed25519"
	"net"
	"sync"
	"testing"

	"dlm/byzantine"
)

// stallListener accepts connections on a loopback port and never answers
// on them: a traitor that stalls every handshake. Close stops it and
// closes what it accepted.
type stallListener struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newStallListener(t *testing.T) *stallListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stallListener{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	})
	t.Cleanup(s.Close)
	return s
}

func (s *stallListener) Close() {
	s.ln.Close()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

// TestStalledHandshakeDoesNotDelayRoundZero: a traitor accepts the loyal
// generals' connections and never answers their handshakes. Round 0 still
// starts at the start time, the loyal commander's orders arrive in time,
// every loyal lieutenant decides them, and the traitor is the one fault
// they see (regression: the handshake had a fixed 5 s deadline that
// ignored the dial context, round 0 began only after every dial returned,
// and the lieutenants decided retreat against a loyal attack).
func TestStalledHandshakeDoesNotDelayRoundZero(t *testing.T) {
	for _, alg := range []byzantine.Algorithm{byzantine.OM, byzantine.SM} {
		t.Run(string(alg), func(t *testing.T) {
			const n, m, traitor = 4, 1, 3
			runWithOneOdd(t, alg, n, m, traitor, func([]ed25519.PrivateKey) string {
				return newStallListener(t).ln.Addr().String()
			})
		})
	}
}
