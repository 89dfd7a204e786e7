package tcp

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"dlm/byzantine"
)

// garbageFrames are what a broken or hostile peer sends after it
// authenticated: an empty frame, an unknown kind, a truncated message, a bad
// marker, and a length above the limit.
func garbageFrames() [][]byte {
	return [][]byte{
		{},
		{0x7f, 1, 2, 3},
		{kindMessage, 1, 0},
		{kindMarker, 1},
	}
}

// serveGarbage follows the launch protocol like Serve, authenticates with
// its own key, then sends malformed frames to every peer and a frame header
// announcing more than the size limit, instead of running the algorithm.
func serveGarbage(ctx context.Context, in io.Reader, out io.Writer) error {
	j, err := joinLaunch(in, out)
	if err != nil {
		return err
	}
	defer j.node.Close()
	dec, enc, a, node := j.dec, j.enc, j.a, j.node
	var g goSignal
	if err := dec.Decode(&g); err != nil {
		return err
	}
	sctx, cancel := context.WithDeadline(ctx, g.Start.Add(a.Config.RoundTimeout))
	defer cancel()
	if err := node.Start(sctx, g.Cluster, TermsOf(a.Config, g.Start)); err != nil {
		return err
	}
	frames := garbageFrames()
	for p := range a.Config.Generals {
		if byzantine.ID(p) == a.ID {
			continue
		}
		// Each peer gets one kind of garbage; the first one also gets an
		// oversized length header.
		f := frames[p%len(frames)]
		if p == 0 {
			node.mu.Lock()
			oc := node.out[byzantine.ID(p)]
			node.mu.Unlock()
			oc.conn.Write([]byte{0xff, 0xff, 0xff, 0xff})
			continue
		}
		node.SendRaw(byzantine.ID(p), f)
	}
	if err := enc.Encode(report{Result: byzantine.GeneralResult{ID: a.ID, Strategy: byzantine.Silent, Decision: byzantine.Attack}}); err != nil {
		return err
	}
	// Stay connected (a hostile peer does not leave) until the coordinator
	// closes our input.
	io.Copy(io.Discard, in)
	return nil
}

// localGarbageSpawner runs general garbage as serveGarbage and the others
// as Serve, in goroutines.
func localGarbageSpawner(garbage byzantine.ID) Spawner {
	return localSpawnerWith(garbage, serveGarbage)
}

// TestMalformedPeerIsCutOff: a general that sends malformed or oversized
// frames is disconnected, counted, and the loyal generals still agree
// without waiting for round timeouts.
func TestMalformedPeerIsCutOff(t *testing.T) {
	tests := []struct {
		name      string
		alg       byzantine.Algorithm
		n, m      int
		processes bool
	}{
		{"OM/n4m1/goroutines", byzantine.OM, 4, 1, false},
		{"SM/n4m1/goroutines", byzantine.SM, 4, 1, false},
		{"OM/n7m2/goroutines", byzantine.OM, 7, 2, false},
		{"OM/n4m1/processes", byzantine.OM, 4, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.processes && testing.Short() {
				t.Skip("starts processes")
			}
			cfg := byzantine.DefaultConfig()
			cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = tt.alg, tt.n, tt.m
			bad := byzantine.ID(tt.n - 1)
			cfg.Faulty = []byzantine.Traitor{{ID: bad, Strategy: byzantine.Silent}}
			cfg.RoundTimeout = 5 * time.Second // a cut-off peer must not cost a timeout
			spawn := localGarbageSpawner(bad)
			if tt.processes {
				spawn = processSpawner(t, bad)
			}
			t0 := time.Now()
			res, err := Launch(t.Context(), cfg, spawn)
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Verify(); err != nil {
				t.Errorf("Verify() = %v, want nil", err)
			}
			for id, d := range res.Decisions() {
				if d != cfg.Order {
					t.Errorf("general %d decided %s, want %s", id, d, cfg.Order)
				}
			}
			if res.Rejected[byzantine.RejectMalformed] == 0 || res.Rejected[byzantine.RejectOversized] == 0 {
				t.Errorf("rejected = %v, want malformed and oversized frames counted", res.Rejected)
			}
			if el := time.Since(t0); el > 4*time.Second {
				t.Errorf("run took %v: the cut-off peer was waited for", el)
			}
		})
	}
}

// TestUnauthenticatedGarbage: a stranger that connects and sends garbage
// fails the handshake and is refused; the node keeps serving its peers.
func TestUnauthenticatedGarbage(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
	}{
		{"random bytes", []byte("GET / HTTP/1.0\r\n\r\n")},
		{"huge header", []byte{0xff, 0xff, 0xff, 0xff}},
		{"unsigned hello", append([]byte{0, 0, 0, 35, kindHello, 0, 1}, make([]byte, 32)...)},
		{"hello with a forged signature", append([]byte{0, 0, 0, helloSize, kindHello, 0, 1}, make([]byte, helloSize-3)...)},
	}
	_, priv0, _ := ed25519.GenerateKey(rand.Reader)
	pub1, priv1, _ := ed25519.GenerateKey(rand.Reader)
	n0, err := Listen("127.0.0.1:0", 0, priv0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n0.Close() })
	n1, err := Listen("127.0.0.1:0", 1, priv1, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n1.Close() })
	c := Cluster{Generals: []Peer{
		{ID: 0, Addr: n0.Addr(), PublicKey: EncodeKey(priv0.Public().(ed25519.PublicKey))},
		{ID: 1, Addr: n1.Addr(), PublicKey: EncodeKey(pub1)},
	}}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- n0.Start(ctx, c, Terms{}) }()
	if err := n1.Start(ctx, c, Terms{}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", n1.Addr())
			if err != nil {
				t.Fatal(err)
			}
			conn.Write(tt.payload)
			conn.(*net.TCPConn).CloseWrite()
			io.Copy(io.Discard, conn) // the node closes its side
			conn.Close()
			waitFor(t, 5*time.Second, func() bool { return n1.Refused() >= i+1 })
			if got := n1.Refused(); got != i+1 {
				t.Errorf("refused = %d, want %d", got, i+1)
			}
			// The authenticated peer still gets through.
			msg := byzantine.Message{To: 1, Round: 0, Seq: 1, Order: byzantine.Attack, Path: []byzantine.ID{0}}
			if err := n0.Send(ctx, msg); err != nil {
				t.Fatal(err)
			}
			ev, err := n1.Recv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Message == nil || ev.From != 0 || ev.Message.Order != byzantine.Attack {
				t.Errorf("got %+v, want the attack order from general 0", ev)
			}
		})
	}
}

// TestSenderIsAuthenticated: a message claiming another sender is stamped
// with the connection's authenticated peer (A2).
func TestSenderIsAuthenticated(t *testing.T) {
	ev, ok := decodeFrame(2, byzantine.RunID{}, mustFrame(t, byzantine.Message{From: 0, To: 1, Order: byzantine.Attack, Path: []byzantine.ID{0}}))
	if !ok || ev.Message == nil {
		t.Fatalf("decodeFrame failed: %+v", ev)
	}
	if ev.From != 2 || ev.Message.From != 2 {
		t.Errorf("sender = %d/%d, want 2 (the authenticated peer)", ev.From, ev.Message.From)
	}
}

func mustFrame(t *testing.T, m byzantine.Message) []byte {
	t.Helper()
	b, err := m.AppendBinary([]byte{kindMessage})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFrames(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		limit   int
		wantErr error
	}{
		{"empty", nil, 10, nil},
		{"small", []byte("hello"), 10, nil},
		{"at limit", bytes.Repeat([]byte{1}, 10), 10, nil},
		{"over limit", bytes.Repeat([]byte{1}, 11), 10, ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteFrame(&buf, tt.payload); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFrame(&buf, tt.limit)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ReadFrame err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && !bytes.Equal(got, tt.payload) {
				t.Errorf("got %q, want %q", got, tt.payload)
			}
		})
	}
}

func TestCluster(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	pub2, _, _ := ed25519.GenerateKey(rand.Reader)
	k, k2 := EncodeKey(pub), EncodeKey(pub2)
	tests := []struct {
		name    string
		c       Cluster
		wantErr bool
	}{
		{"ok", Cluster{Generals: []Peer{{ID: 1, Addr: "b:7401", PublicKey: k2}, {ID: 0, Addr: "a:7400", PublicKey: k}}}, false},
		{"duplicate id", Cluster{Generals: []Peer{{ID: 0, PublicKey: k}, {ID: 0, PublicKey: k}}}, true},
		{"id out of range", Cluster{Generals: []Peer{{ID: 0, PublicKey: k}, {ID: 5, PublicKey: k}}}, true},
		{"bad key", Cluster{Generals: []Peer{{ID: 0, PublicKey: "nope"}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.c.PublicKeys()
			if (err != nil) != tt.wantErr {
				t.Fatalf("PublicKeys() err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrCluster) {
				t.Errorf("err = %v, want ErrCluster", err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "tcp: ") {
				t.Errorf("err = %q, want the package prefix", err)
			}
		})
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() && time.Now().Before(deadline) {
		<-tick.C
	}
}
