package tcp

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"dlm/byzantine"
)

// TestClusterRefusesAmbiguousGenerals: a cluster file in which two
// generals share a public key (whoever holds it would speak as both: two
// of n generals for one key), share an address, or name an address that
// cannot be dialled is refused when it is read (ErrCluster, naming the
// generals), instead of running until the start and counting the
// generals absent. Failed before: all three were accepted.
func TestClusterRefusesAmbiguousGenerals(t *testing.T) {
	var keys []string
	for range 3 {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, EncodeKey(pub))
	}
	peers := func(addrs, ks []string) Cluster {
		var c Cluster
		for i := range addrs {
			c.Generals = append(c.Generals, Peer{ID: byzantine.ID(i), Addr: addrs[i], PublicKey: ks[i]})
		}
		return c
	}
	good := []string{"127.0.0.1:7400", "127.0.0.1:7401", "[::1]:7402"}
	if _, err := peers(good, keys).PublicKeys(); err != nil {
		t.Fatalf("a good cluster is refused: %v", err)
	}
	for _, tt := range []struct {
		name  string
		addrs []string
		keys  []string
		want  string
	}{
		{"one key twice", good, []string{keys[0], keys[1], keys[1]}, "generals 1 and 2 have the same public key"},
		{"one address twice", []string{"127.0.0.1:7400", "127.0.0.1:7401", "127.0.0.1:7401"}, keys, `generals 1 and 2 have the same address "127.0.0.1:7401"`},
		{"port out of range", []string{"127.0.0.1:7400", "127.0.0.1:99999", "127.0.0.1:7402"}, keys, `general 1: address "127.0.0.1:99999"`},
		{"no port", []string{"127.0.0.1:7400", "127.0.0.1", "127.0.0.1:7402"}, keys, `general 1: address "127.0.0.1"`},
		{"no host or port", []string{"127.0.0.1:7400", "", "127.0.0.1:7402"}, keys, `general 1: address ""`},
	} {
		_, err := peers(tt.addrs, tt.keys).PublicKeys()
		if !errors.Is(err, ErrCluster) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrCluster saying %q", tt.name, err, tt.want)
		}
	}
}
