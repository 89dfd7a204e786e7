package byzantine

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
)

// Keyring holds the keys one general needs for SM (A4): its own private key
// and every general's public key, indexed by ID.
type Keyring struct {
	Private ed25519.PrivateKey
	Public  []ed25519.PublicKey
}

// DeriveKeys returns n ed25519 key pairs derived from seed, the same for the
// same seed, so an in-memory run replays exactly. Real deployments generate
// keys with ed25519.GenerateKey instead (see package tcp).
func DeriveKeys(seed int64, n int) ([]ed25519.PrivateKey, []ed25519.PublicKey) {
	priv := make([]ed25519.PrivateKey, n)
	pub := make([]ed25519.PublicKey, n)
	for i := range n {
		var in [24]byte
		copy(in[:8], "dlm-keys")
		binary.BigEndian.PutUint64(in[8:], uint64(seed))
		binary.BigEndian.PutUint64(in[16:], uint64(i))
		s := sha256.Sum256(in[:])
		priv[i] = ed25519.NewKeyFromSeed(s[:])
		pub[i] = priv[i].Public().(ed25519.PublicKey)
	}
	return priv, pub
}

// signDomain separates SM signatures from any other use of the keys.
const signDomain = "dlm/byzantine/sm/v2"

// linkBytes appends to b the bytes signed by the general at position t of
// a chain: the domain, the run id, the run's sequence number, the order, the chain up to
// and including position t, and the previous link's signature. Each link
// thus signs the whole message it received plus its own id (B9: v:0:j1..jk:i).
func linkBytes(b []byte, run RunID, seq uint64, o Order, path []ID, prevSig []byte) []byte {
	b = append(b, signDomain...)
	b = append(b, run[:]...)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = append(b, byte(len(o)))
	b = append(b, o...)
	b = append(b, byte(len(path)))
	for _, id := range path {
		b = binary.BigEndian.AppendUint16(b, uint16(id))
	}
	return append(b, prevSig...)
}

// finalLink reports whether position t of a chain is its last possible link
// (k = m relays). B9: the m-th signature is never relayed, so that link is
// not signed; the receiver knows its sender by A2.
func finalLink(t, m int) bool { return t == m && m > 0 }
