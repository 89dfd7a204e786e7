package byzantine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
)

// RunID names one run of an algorithm. It is derived from what makes a run
// (the cluster of generals, the start time and the sequence number; see
// NewRunID), carried by every message, signed into every SM link and, over
// TCP, bound into the handshake and the end-of-round markers, so that
// messages, signatures and connections of one run are refused in another
// (B9: no replay across runs).
type RunID [16]byte

// NewRunID derives a run id from binding (a canonical description of the
// generals, for example the cluster file's ids, addresses and public keys;
// may be nil), the start time of round 0 (the zero time for runs that have
// none) and the sequence number. Two runs that differ in any of them get
// different ids.
func NewRunID(binding []byte, start time.Time, seq uint64) RunID {
	h := sha256.New()
	h.Write([]byte("dlm/byzantine/run/v1"))
	var b []byte
	b = binary.BigEndian.AppendUint64(b, uint64(len(binding)))
	h.Write(b)
	h.Write(binding)
	var ns int64
	if !start.IsZero() {
		ns = start.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b[:0], uint64(ns))
	b = binary.BigEndian.AppendUint64(b, seq)
	h.Write(b)
	var id RunID
	copy(id[:], h.Sum(nil))
	return id
}

// IsZero reports whether id is the zero RunID (none set).
func (id RunID) IsZero() bool { return id == RunID{} }

// String returns id in hexadecimal.
func (id RunID) String() string { return hex.EncodeToString(id[:]) }

// MarshalText encodes id in hexadecimal.
func (id RunID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText decodes a hexadecimal run id.
func (id *RunID) UnmarshalText(b []byte) error {
	var out RunID
	if n, err := hex.Decode(out[:], b); err != nil || n != len(out) || len(b) != 2*len(out) {
		return fmt.Errorf("%w: run id %q: want %d hex digits", ErrInvalidConfig, b, 2*len(out))
	}
	*id = out
	return nil
}

// Run returns the run id of c: c.RunID when set, otherwise one derived
// from the sequence number alone (NewRunID(nil, zero time, c.Seq)), which
// is what in-memory runs use.
func (c Config) Run() RunID {
	if !c.RunID.IsZero() {
		return c.RunID
	}
	return NewRunID(nil, time.Time{}, c.Seq)
}
