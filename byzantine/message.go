package byzantine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ID identifies a general; 0 is the commander, 1..n-1 the lieutenants.
type ID int

// Message is one order in flight. The same type serves OM and SM: for OM,
// Path is the relay path that attributes the message to its sub-execution
// of OM(m-1) (B6); for SM it is the signature chain v:0:j1:...:jk and Sigs
// holds one signature per link (B9). Path always starts with the commander.
// Messages are values; a general never modifies a received Path or Sigs.
type Message struct {
	// From is the sender, as authenticated by the transport (A2).
	From ID `json:"from"`
	// To is the receiver.
	To ID `json:"to"`
	// Round is the round in which the message was sent.
	Round int `json:"round"`
	// Seq is the run's sequence number (B9: no replay across runs).
	Seq uint64 `json:"seq"`
	// Run is the run id (see RunID): a message of another run is stale.
	Run RunID `json:"run"`
	// Order is the value carried.
	Order Order `json:"order"`
	// Path is the relay path (OM) or signer chain (SM), starting with 0.
	Path []ID `json:"path"`
	// Sigs are the ed25519 signatures of the chain links (SM only).
	Sigs [][]byte `json:"sigs,omitempty"`
}

// Chain formats the message as the spec writes it: "attack:0:2:3".
func (m Message) Chain() string {
	var b strings.Builder
	b.WriteString(m.Order.String())
	for _, id := range m.Path {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(int(id)))
	}
	return b.String()
}

// RejectReason says why a general refused a message. Rejected messages are
// counted, never believed.
type RejectReason string

// The reasons a message is rejected.
const (
	// RejectMalformed: the path or chain is not a valid one (does not start
	// with the commander, names a general twice or one out of range,
	// contains the receiver, or does not match its round).
	RejectMalformed RejectReason = "malformed"
	// RejectOversized: the order or chain is longer than allowed; relays stop
	// at k = m.
	RejectOversized RejectReason = "oversized"
	// RejectSpoofed: the last general of the path is not the authenticated
	// sender (A2).
	RejectSpoofed RejectReason = "spoofed"
	// RejectMisaddressed: the message is not for this general.
	RejectMisaddressed RejectReason = "misaddressed"
	// RejectLate: the message arrived after its round ended (A3, B9 timing).
	RejectLate RejectReason = "late"
	// RejectDuplicate: the same path (and order) was already received.
	RejectDuplicate RejectReason = "duplicate"
	// RejectForged: a signature of the chain does not verify (A4).
	RejectForged RejectReason = "forged"
	// RejectFlood: an SM peer sent this general more messages than a loyal
	// general sends any one general in a run (the commander one order, a
	// lieutenant one relay of each of the at most MaxValues orders it
	// keeps); the excess is not kept and not verified.
	RejectFlood RejectReason = "flood"
	// RejectStale: the sequence number or run id is another run's (replay,
	// or a message of a concurrent run; B9).
	RejectStale RejectReason = "stale"
	// RejectSecondOrder: the commander already gave this general an order
	// directly (SM): a lieutenant takes at most one order from the
	// commander, so a traitor's volume never becomes its work.
	RejectSecondOrder RejectReason = "second-order"
	// RejectSurplus: this SM general already holds two orders, which is all
	// choice(V) needs (any two distinct orders decide RETREAT), so a third
	// is neither verified, kept nor relayed.
	RejectSurplus RejectReason = "surplus"
)

// Describe says in a sentence why a message refused for reason r was
// refused, for reports and traces.
func (r RejectReason) Describe() string {
	switch r {
	case RejectMalformed:
		return "its path is not a valid relay path (it must start with the commander, name no general twice, not contain the receiver, and be as long as its round says)"
	case RejectOversized:
		return "its order or chain is longer than allowed (relays stop after m lieutenants)"
	case RejectSpoofed:
		return "the last general on its path is not the one who delivered it (the receiver knows who sent what it receives)"
	case RejectMisaddressed:
		return "it was addressed to another general"
	case RejectLate:
		return "it arrived after its round ended (a missing message is known missing at the round's deadline, and what comes after does not count)"
	case RejectDuplicate:
		return "the same order along the same path had already been received"
	case RejectForged:
		return "a signature of its chain does not verify (a loyal general's signature cannot be forged, and an altered order breaks it)"
	case RejectFlood:
		return "its sender sent this general more signed messages than a loyal general ever does (a lieutenant relays each of at most two orders once), so the rest is not checked"
	case RejectStale:
		return "it belongs to another run (another sequence number or run id: a replay)"
	case RejectSecondOrder:
		return "the commander had already given this lieutenant an order; a second one, however well signed, is not taken"
	case RejectSurplus:
		return "this lieutenant already held two orders, which decide choice(V) = RETREAT; a third changes nothing and is not relayed"
	}
	return string(r)
}

// Wire format of a message, used by real transports and to count bytes:
//
//	version   1 byte (1)
//	from, to  2 bytes each
//	round     2 bytes
//	seq       8 bytes
//	run       16 bytes (the run id)
//	order     1 byte length, then the bytes
//	path      1 byte length, then 2 bytes per id
//	sigs      1 byte count, then per signature 1 byte length and the bytes
//
// All integers are big-endian.
const wireVersion = 2

// ErrMalformedMessage is returned by UnmarshalBinary for bytes that are not a
// message.
var ErrMalformedMessage = errors.New("byzantine: malformed message")

// EncodedSize returns the length of m's wire encoding.
func (m Message) EncodedSize() int {
	size := 1 + 2 + 2 + 2 + 8 + len(RunID{}) + 1 + len(m.Order) + 1 + 2*len(m.Path) + 1
	for _, s := range m.Sigs {
		size += 1 + len(s)
	}
	return size
}

// AppendBinary appends m's wire encoding to b.
func (m Message) AppendBinary(b []byte) ([]byte, error) {
	if len(m.Order) > 255 || len(m.Path) > 255 || len(m.Sigs) > 255 {
		return b, fmt.Errorf("%w: too long to encode", ErrMalformedMessage)
	}
	b = append(b, wireVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(m.From))
	b = binary.BigEndian.AppendUint16(b, uint16(m.To))
	b = binary.BigEndian.AppendUint16(b, uint16(m.Round))
	b = binary.BigEndian.AppendUint64(b, m.Seq)
	b = append(b, m.Run[:]...)
	b = append(b, byte(len(m.Order)))
	b = append(b, m.Order...)
	b = append(b, byte(len(m.Path)))
	for _, id := range m.Path {
		b = binary.BigEndian.AppendUint16(b, uint16(id))
	}
	b = append(b, byte(len(m.Sigs)))
	for _, s := range m.Sigs {
		if len(s) > 255 {
			return b, fmt.Errorf("%w: signature too long to encode", ErrMalformedMessage)
		}
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

// MarshalBinary returns m's wire encoding.
func (m Message) MarshalBinary() ([]byte, error) {
	return m.AppendBinary(make([]byte, 0, m.EncodedSize()))
}

// UnmarshalBinary decodes a wire encoding into m. It never panics on
// arbitrary input; bad input gives an error wrapping ErrMalformedMessage.
func (m *Message) UnmarshalBinary(b []byte) error {
	r := reader{b: b}
	if v := r.byte(); v != wireVersion {
		return fmt.Errorf("%w: version %d", ErrMalformedMessage, v)
	}
	var out Message
	out.From = ID(r.u16())
	out.To = ID(r.u16())
	out.Round = int(r.u16())
	out.Seq = r.u64()
	copy(out.Run[:], r.take(len(out.Run)))
	out.Order = Order(r.bytes(int(r.byte())))
	if np := int(r.byte()); np > 0 {
		out.Path = make([]ID, np)
		for i := range out.Path {
			out.Path[i] = ID(r.u16())
		}
	}
	if ns := int(r.byte()); ns > 0 {
		out.Sigs = make([][]byte, ns)
		for i := range out.Sigs {
			out.Sigs[i] = []byte(r.bytes(int(r.byte())))
		}
	}
	if r.err {
		return fmt.Errorf("%w: truncated", ErrMalformedMessage)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformedMessage, len(r.b))
	}
	*m = out
	return nil
}

type reader struct {
	b   []byte
	err bool
}

func (r *reader) take(n int) []byte {
	if r.err || n > len(r.b) {
		r.err = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) byte() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *reader) bytes(n int) string {
	return string(r.take(n))
}
