package tcp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"dlm/byzantine"
)

// Terms are what every general of a run must be given alike for their
// messages to mean the same thing: the algorithm and its m, the majority
// a lieutenant decides by, the number of generals, the round timeout
// (every deadline derives from it and from the start), whether the run
// is one of interactive consistency and, for an epoch of a team, what its
// values are for (Use), the sequence number and the start time. RunID binds them with the cluster, so generals given other terms
// are in another run and refuse each other's handshakes; each hello
// also carries the dialer's terms, signed through its run id, so the
// listener can say what differs (see TermDiff). What a general chooses
// for itself alone (its order or value, a traitor's strategy, its seed,
// its output) is not among them.
type Terms struct {
	// Algorithm is OM or SM.
	Algorithm byzantine.Algorithm
	// Generals is n.
	Generals int
	// MaxTraitors is m.
	MaxTraitors int
	// Majority is the majority variant.
	Majority byzantine.MajorityVariant
	// RoundTimeout bounds one round.
	RoundTimeout time.Duration
	// Interactive is set for a run of interactive consistency (n
	// instances, each general the commander of its own value).
	Interactive bool
	// Use names what the agreed values of an epoch are for (the dlm
	// generals command that runs it: leader, failures or clock): generals
	// that read the same vector for different uses compute different
	// things. Empty for a run on its own.
	Use string
	// Seq is the sequence number.
	Seq uint64
	// Start is the start of round 0 (the zero time for none).
	Start time.Time
}

// TermsOf returns the terms of one run of cfg (not interactive) that
// starts at start.
func TermsOf(cfg byzantine.Config, start time.Time) Terms {
	return Terms{
		Algorithm:    cfg.Algorithm,
		Generals:     cfg.Generals,
		MaxTraitors:  cfg.MaxTraitors,
		Majority:     cfg.Majority,
		RoundTimeout: cfg.RoundTimeout,
		Seq:          cfg.Seq,
		Start:        start,
	}
}

// InteractiveTermsOf returns the terms of a run of interactive
// consistency with cfg (ic.Config) that starts at start.
func InteractiveTermsOf(cfg byzantine.Config, start time.Time) Terms {
	t := TermsOf(cfg, start)
	t.Interactive = true
	return t
}

// termName is the size of the algorithm and majority fields on the wire;
// longer names are cut there (the run id binds them whole).
const termName = 8

// termsSize is the size of encoded terms: algorithm and majority
// (termName bytes each, zero-padded), n and m (2 bytes each), the round
// timeout in nanoseconds (8), interactive (1), seq (8), the start in
// Unix nanoseconds, 0 for none (8), and the use (termName bytes).
const termsSize = 2*termName + 2 + 2 + 8 + 1 + 8 + 8 + termName

// encode returns t in its fixed-size wire form.
func (t Terms) encode() []byte {
	b := make([]byte, 0, termsSize)
	name := func(s string) {
		var f [termName]byte
		copy(f[:], s)
		b = append(b, f[:]...)
	}
	name(string(t.Algorithm))
	name(string(t.Majority))
	b = binary.BigEndian.AppendUint16(b, uint16(t.Generals))
	b = binary.BigEndian.AppendUint16(b, uint16(t.MaxTraitors))
	b = binary.BigEndian.AppendUint64(b, uint64(t.RoundTimeout))
	inter := byte(0)
	if t.Interactive {
		inter = 1
	}
	b = append(b, inter)
	b = binary.BigEndian.AppendUint64(b, t.Seq)
	var ns int64
	if !t.Start.IsZero() {
		ns = t.Start.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(ns))
	name(t.Use)
	return b
}

// decodeTerms reads terms in the form encode writes (b has termsSize
// bytes).
func decodeTerms(b []byte) Terms {
	name := func(f []byte) string { return string(bytes.TrimRight(f, "\x00")) }
	t := Terms{
		Algorithm:    byzantine.Algorithm(name(b[:termName])),
		Majority:     byzantine.MajorityVariant(name(b[termName : 2*termName])),
		Generals:     int(binary.BigEndian.Uint16(b[2*termName:])),
		MaxTraitors:  int(binary.BigEndian.Uint16(b[2*termName+2:])),
		RoundTimeout: time.Duration(binary.BigEndian.Uint64(b[2*termName+4:])),
		Interactive:  b[2*termName+12] != 0,
		Seq:          binary.BigEndian.Uint64(b[2*termName+13:]),
	}
	if ns := int64(binary.BigEndian.Uint64(b[2*termName+21:])); ns != 0 {
		t.Start = time.Unix(0, ns).UTC()
	}
	t.Use = name(b[2*termName+29 : 3*termName+29])
	return t
}

// TermDiff is one term in which a peer's run differs from this
// general's. Name is the name of the "dlm generals node" flag that sets
// it (algorithm, generals, traitors, majority, round-timeout,
// interactive, seq, start), or command for the use of an epoch (the dlm
// generals command: leader, failures, clock); Theirs and Ours are the two
// values as that flag takes them ("none" for no use).
type TermDiff struct {
	Name   string `json:"flag"`
	Theirs string `json:"theirs"`
	Ours   string `json:"ours"`
}

// Diff lists the terms in which theirs differs from ours, in a fixed
// order; none when they are alike.
func Diff(theirs, ours Terms) []TermDiff {
	var d []TermDiff
	add := func(name, a, b string) {
		if a != b {
			d = append(d, TermDiff{Name: name, Theirs: a, Ours: b})
		}
	}
	cut := func(s string) string { return s[:min(len(s), termName)] } // as the wire carries it
	add("algorithm", cut(string(theirs.Algorithm)), cut(string(ours.Algorithm)))
	add("traitors", strconv.Itoa(theirs.MaxTraitors), strconv.Itoa(ours.MaxTraitors))
	add("generals", strconv.Itoa(theirs.Generals), strconv.Itoa(ours.Generals))
	add("majority", cut(string(theirs.Majority)), cut(string(ours.Majority)))
	add("round-timeout", theirs.RoundTimeout.String(), ours.RoundTimeout.String())
	add("interactive", strconv.FormatBool(theirs.Interactive), strconv.FormatBool(ours.Interactive))
	use := func(s string) string {
		if s == "" {
			return "none"
		}
		return cut(s)
	}
	add("command", use(theirs.Use), use(ours.Use))
	add("start", startText(theirs.Start), startText(ours.Start))
	add("seq", strconv.FormatUint(theirs.Seq, 10), strconv.FormatUint(ours.Seq, 10))
	return d
}

func startText(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// DiffText says how a peer's run differs, one "--flag theirs there, ours
// here" per term, for an error message.
func DiffText(d []TermDiff) string {
	parts := make([]string, 0, len(d))
	for _, x := range d {
		if x.Name == "command" {
			parts = append(parts, fmt.Sprintf("dlm generals %s there, %s here", x.Theirs, x.Ours))
			continue
		}
		parts = append(parts, fmt.Sprintf("--%s %s there, %s here", x.Name, x.Theirs, x.Ours))
	}
	return strings.Join(parts, "; ")
}
