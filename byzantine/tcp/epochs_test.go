package tcp_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// TestEpochListenerKeepsThePort: a team runs two epochs over listeners
// kept across them (tcp.ListenEpochs): every epoch decides, and between
// the two no other process can bind a general's port. Before, each epoch
// listened afresh and closed at its end, so a process that bound the port
// in between kept the general out of the next epoch, and the team declared
// it failed twice.
func TestEpochListenerKeepsThePort(t *testing.T) {
	const n, m = 4, 1
	keys := make([]ed25519.PrivateKey, n)
	ls := make([]*tcp.EpochListener, n)
	var c tcp.Cluster
	for i := range n {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = priv
		l, err := tcp.ListenEpochs("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		ls[i] = l
		c.Generals = append(c.Generals, tcp.Peer{ID: byzantine.ID(i), Addr: l.Addr(), PublicKey: tcp.EncodeKey(pub)})
	}
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.RoundTimeout = byzantine.OM, n, m, time.Second
	ic := byzantine.InteractiveConfig{Config: cfg}
	for epoch := range 2 {
		start := time.Now().Add(300 * time.Millisecond)
		errs := make([]error, n)
		res := make([]byzantine.InteractiveGeneralResult, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res[i], _, errs[i] = tcp.RunInteractiveEpochOn(t.Context(), ls[i], c, byzantine.ID(i), keys[i], ic, "leader", start, byzantine.Order("v"))
			})
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("epoch %d, general %d: %v", epoch, i, errs[i])
			}
			if len(res[i].Vector) != n {
				t.Errorf("epoch %d, general %d: vector %v", epoch, i, res[i].Vector)
			}
		}
		for i, p := range c.Generals {
			if ln, err := net.Listen("tcp", p.Addr); err == nil {
				ln.Close()
				t.Errorf("after epoch %d, general %d's port %s is free: another process could take it", epoch, i, p.Addr)
			}
		}
	}
}
