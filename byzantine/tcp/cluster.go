package tcp

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"dlm/byzantine"
)

// Peer is one general of a cluster: its id, the address it listens on and
// its ed25519 public key, which authenticates it (A2, A4).
type Peer struct {
	ID        byzantine.ID `json:"id"`
	Addr      string       `json:"addr"`
	PublicKey string       `json:"public_key"` // base64 (standard encoding)
}

// Cluster is the cluster file: every general of a run, so that generals on
// several machines can find and authenticate each other. Example:
//
//	{"generals": [
//	  {"id": 0, "addr": "10.0.0.1:7400", "public_key": "base64..."},
//	  {"id": 1, "addr": "10.0.0.2:7400", "public_key": "base64..."}
//	]}
type Cluster struct {
	Generals []Peer `json:"generals"`
}

// ErrCluster is wrapped by errors about a cluster file.
var ErrCluster = errors.New("tcp: bad cluster")

// LoadCluster reads and checks a cluster file.
func LoadCluster(path string) (Cluster, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Cluster{}, err
	}
	var c Cluster
	if err := json.Unmarshal(b, &c); err != nil {
		return Cluster{}, fmt.Errorf("%w: %s: %s", ErrCluster, path, notCluster(b, err))
	}
	if _, err := c.PublicKeys(); err != nil {
		return Cluster{}, err
	}
	return c, nil
}

// clusterShape is what a cluster file holds, for errors.
const clusterShape = `a cluster file is JSON: {"generals": [{"id": 0, "addr": "host:port", "public_key": "base64"}, ...]}`

// notCluster says why b, which failed to decode with err, is not a
// cluster file, without quoting any of it: the file may be a private key
// given as the cluster by mistake (encoding/json's syntax errors quote
// the offending character).
func notCluster(b []byte, err error) string {
	if seed, derr := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); derr == nil && len(seed) == ed25519.SeedSize {
		return "not a cluster file: it looks like a private key made by dlm generals keygen (give it as the key); " + clusterShape
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("not valid JSON at byte %d; %s", syn.Offset, clusterShape)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Sprintf("field %q holds a JSON %s where %s is expected; %s", typ.Field, jsonKind(typ.Value), typ.Type, clusterShape)
	}
	return "not a cluster file; " + clusterShape
}

// jsonKind is the kind of JSON value in an UnmarshalTypeError's Value,
// which may go on with the value itself ("number 5"): only the kind is
// kept.
func jsonKind(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	return kind
}

// PublicKeys checks that the cluster lists ids 0..n-1 exactly once each,
// each with a valid key of its own and an address of its own (host:port,
// the host possibly empty), and returns the keys indexed by id. Two
// generals with one key would let whoever holds it speak as both.
func (c Cluster) PublicKeys() ([]ed25519.PublicKey, error) {
	n := len(c.Generals)
	keys := make([]ed25519.PublicKey, n)
	byKey := make(map[string]byzantine.ID, n)
	byAddr := make(map[string]byzantine.ID, n)
	for _, p := range c.Generals {
		if p.ID < 0 || int(p.ID) >= n {
			return nil, fmt.Errorf("%w: id %d out of range 0..%d", ErrCluster, p.ID, n-1)
		}
		if keys[p.ID] != nil {
			return nil, fmt.Errorf("%w: id %d listed twice", ErrCluster, p.ID)
		}
		if _, port, err := net.SplitHostPort(p.Addr); err != nil || !validPort(port) {
			return nil, fmt.Errorf("%w: general %d: address %q: want host:port, with a port from 1 to 65535", ErrCluster, p.ID, p.Addr)
		}
		if q, ok := byAddr[p.Addr]; ok {
			return nil, fmt.Errorf("%w: generals %d and %d have the same address %q: each general listens on its own", ErrCluster, min(p.ID, q), max(p.ID, q), p.Addr)
		}
		byAddr[p.Addr] = p.ID
		k, err := base64.StdEncoding.DecodeString(p.PublicKey)
		if err != nil || len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: general %d: public key is not a base64 ed25519 key", ErrCluster, p.ID)
		}
		if q, ok := byKey[string(k)]; ok {
			return nil, fmt.Errorf("%w: generals %d and %d have the same public key: each general needs its own (dlm generals keygen), or whoever holds it speaks as both", ErrCluster, min(p.ID, q), max(p.ID, q))
		}
		byKey[string(k)] = p.ID
		keys[p.ID] = k
	}
	return keys, nil
}

// validPort reports whether port is a decimal TCP port from 1 to 65535.
func validPort(port string) bool {
	v, err := strconv.Atoi(port)
	return err == nil && v >= 1 && v <= 65535 && strconv.Itoa(v) == port
}

// Addr returns the address of general id.
func (c Cluster) Addr(id byzantine.ID) string {
	for _, p := range c.Generals {
		if p.ID == id {
			return p.Addr
		}
	}
	return ""
}

// RunID derives the id of the run of cluster c with terms t:
// byzantine.NewRunID over the cluster's ids, addresses and public keys
// (in id order) and the terms (algorithm, n, m, majority, round timeout,
// interactive), with t.Start and t.Seq. Every general of a run computes
// the same id from the same cluster file and run flags; a run with
// another cluster (even one entry pointing elsewhere) or other terms
// gets another id, and its handshakes, markers and signatures are
// refused.
func RunID(c Cluster, t Terms) byzantine.RunID {
	peers := slices.Clone(c.Generals)
	slices.SortFunc(peers, func(a, b Peer) int { return int(a.ID - b.ID) })
	var b []byte
	for _, p := range peers {
		b = binary.BigEndian.AppendUint16(b, uint16(p.ID))
		b = binary.BigEndian.AppendUint16(b, uint16(len(p.Addr)))
		b = append(b, p.Addr...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p.PublicKey)))
		b = append(b, p.PublicKey...)
	}
	for _, name := range []string{string(t.Algorithm), string(t.Majority), t.Use} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(name)))
		b = append(b, name...)
	}
	b = append(b, t.encode()...)
	return byzantine.NewRunID(b, t.Start, t.Seq)
}

// EncodeKey returns the base64 form of a public key used in cluster files.
func EncodeKey(k ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(k) }
