package tcptest

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"slices"
	"testing"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// NewKeys returns n fresh ed25519 private keys, general i's at index i.
func NewKeys(t testing.TB, n int) []ed25519.PrivateKey {
	t.Helper()
	keys := make([]ed25519.PrivateKey, n)
	for i := range keys {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = priv
	}
	return keys
}

// PublicKeys returns the public keys of keys, in the same order.
func PublicKeys(keys []ed25519.PrivateKey) []ed25519.PublicKey {
	pubs := make([]ed25519.PublicKey, len(keys))
	for i, k := range keys {
		pubs[i] = k.Public().(ed25519.PublicKey)
	}
	return pubs
}

// Listen starts a Node for general id with key priv on a free loopback
// port, closed at the end of the test.
func Listen(t testing.TB, id byzantine.ID, priv ed25519.PrivateKey) *tcp.Node {
	t.Helper()
	n, err := tcp.Listen("127.0.0.1:0", id, priv, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// ListenAll starts a Node for each of the first k generals of keys, as
// Listen does.
func ListenAll(t testing.TB, keys []ed25519.PrivateKey, k int) []*tcp.Node {
	t.Helper()
	nodes := make([]*tcp.Node, k)
	for i := range nodes {
		nodes[i] = Listen(t, byzantine.ID(i), keys[i])
	}
	return nodes
}

// Addrs returns the addresses the nodes listen on.
func Addrs(nodes []*tcp.Node) []string {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// ClusterOf lists the generals at addrs with keys, general i at index i.
func ClusterOf(addrs []string, keys []ed25519.PrivateKey) tcp.Cluster {
	var c tcp.Cluster
	for i, a := range addrs {
		c.Generals = append(c.Generals, tcp.Peer{ID: byzantine.ID(i), Addr: a, PublicKey: tcp.EncodeKey(keys[i].Public().(ed25519.PublicKey))})
	}
	return c
}

// RefusedAddr returns a loopback address that refuses connections: a
// port that was free a moment ago.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Generals are the generals of a Scenario placed on loopback before its
// run: every general's key, a Node for each that runs one, and the
// cluster that lists them all.
type Generals struct {
	// Keys holds general i's private key at index i.
	Keys []ed25519.PrivateKey
	// Nodes holds general i's Node at index i, nil for an absent general
	// and for a traitor that stalls handshakes or never reads.
	Nodes []*tcp.Node
	// Addrs holds the address the cluster lists for general i.
	Addrs []string
	// Cluster lists every general.
	Cluster tcp.Cluster

	deaf map[int]*DeafListener
}

// Place places sc's generals: an absent general at an address that
// refuses connections, a traitor that stalls handshakes behind a
// StallListener, one that stops reading behind a DeafListener (bound now,
// serving once ServeDeaf is given the run id, which covers every
// address), every other general on a Node of its own.
func Place(t testing.TB, sc Scenario) *Generals {
	t.Helper()
	g := &Generals{
		Keys:  NewKeys(t, sc.N),
		Nodes: make([]*tcp.Node, sc.N),
		Addrs: make([]string, sc.N),
		deaf:  make(map[int]*DeafListener),
	}
	for i := range sc.N {
		id := byzantine.ID(i)
		tr, isTraitor := sc.Traitor(id)
		switch {
		case slices.Contains(sc.Absent, id):
			g.Addrs[i] = RefusedAddr(t)
		case isTraitor && tr.Attack == StallHandshakes:
			g.Addrs[i] = StallListener(t)
		case isTraitor && tr.Attack == StopReading:
			g.deaf[i] = NewDeafListener(t, id, g.Keys[i])
			g.Addrs[i] = g.deaf[i].Addr()
		default:
			g.Nodes[i] = Listen(t, id, g.Keys[i])
			g.Addrs[i] = g.Nodes[i].Addr()
		}
	}
	g.Cluster = ClusterOf(g.Addrs, g.Keys)
	return g
}

// ServeDeaf has the traitors that stop reading answer the handshakes of
// run from now until the test ends.
func (g *Generals) ServeDeaf(run byzantine.RunID) {
	for _, d := range g.deaf {
		d.Serve(run)
	}
}
