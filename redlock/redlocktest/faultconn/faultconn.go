package faultconn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is one kind of fault a Conn or a dial injects.
type Fault uint8

// The faults, each drawn independently.
const (
	// FailWrite fails a Write before anything is written; the connection
	// stays open (the adapter must give it up).
	FailWrite Fault = iota
	// PartialWrite writes part of a Write, closes the connection and fails.
	PartialWrite
	// CloseMidBatch writes a Write whole and closes the connection moments
	// later, while its replies are on the way.
	CloseMidBatch
	// DelayRead delays a Read by up to Config.MaxDelay.
	DelayRead
	// TruncateRead returns part of what a Read got and closes the
	// connection: the rest of the reply is lost.
	TruncateRead
	// StallReader makes a connection's Read, once it failed, return up to
	// Config.MaxStall late: a reader goroutine that runs late after its
	// connection was closed and replaced. Drawn once per connection.
	StallReader
	// FailDial fails a dial.
	FailDial
	// ResetAfterDial dials, then closes the new connection moments later:
	// a reset while the redial, its handshake and the first batch on it
	// are under way.
	ResetAfterDial
	// DelayWrite holds a Write's bytes, and every Write after it, for up to
	// Config.MaxStall before they go on the wire (a segment delayed in the
	// network), while the Writes return at once; a Close meanwhile stops
	// the reading at once but closes the connection only after the held
	// bytes went out, so they can reach the node after the client gave the
	// connection up and went on over another.
	DelayWrite

	numFaults
)

// String names the fault.
func (f Fault) String() string {
	switch f {
	case FailWrite:
		return "fail-write"
	case PartialWrite:
		return "partial-write"
	case CloseMidBatch:
		return "close-mid-batch"
	case DelayRead:
		return "delay-read"
	case TruncateRead:
		return "truncate-read"
	case StallReader:
		return "stall-reader"
	case FailDial:
		return "fail-dial"
	case ResetAfterDial:
		return "reset-after-dial"
	case DelayWrite:
		return "delay-write"
	}
	return "fault(?)"
}

// ParseFaults reads a comma-separated list of fault names (Fault.String);
// "" or "all" is every fault.
func ParseFaults(s string) ([]Fault, error) {
	if s == "" || s == "all" {
		return AllFaults(), nil
	}
	var out []Fault
	for name := range strings.SplitSeq(s, ",") {
		found := false
		for _, f := range AllFaults() {
			if f.String() == strings.TrimSpace(name) {
				out = append(out, f)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("faultconn: unknown fault %q: expected a comma-separated list of %v, or all", name, AllFaults())
		}
	}
	return out, nil
}

// AllFaults returns every fault, in order.
func AllFaults() []Fault {
	out := make([]Fault, numFaults)
	for i := range out {
		out[i] = Fault(i)
	}
	return out
}

// ErrInjected is the error of an injected failure.
var ErrInjected = errors.New("faultconn: injected fault")

// Config is what an Injector injects.
type Config struct {
	// Seed seeds the draws.
	Seed uint64
	// Rate is the probability, in [0, 1], that a call (a Write, a Read, a
	// dial) gets one of the Faults that break a connection.
	Rate float64
	// SlowRate is the probability that a Read is delayed (DelayRead), and
	// that a new connection stalls its reader (StallReader); 0: ten times
	// Rate, at most 1/2. The slow faults open the windows in which the
	// others race: a reply that has not been read yet, a reader that has
	// not run yet.
	SlowRate float64
	// MaxDelay bounds the delays of reads and of the closes after a write
	// or a dial; 0: 20 ms.
	MaxDelay time.Duration
	// MaxStall bounds a stalled reader's lateness (StallReader); 0: 250
	// ms, longer than the deadlines of the requests it should outlive, so
	// that the connection is replaced before its reader runs.
	MaxStall time.Duration
	// Faults are the faults drawn from; nil: AllFaults.
	Faults []Fault
}

// Injector dials connections and breaks them as its Config says. It is
// safe for concurrent use.
type Injector struct {
	cfg     Config
	enabled atomic.Bool

	mu     sync.Mutex
	rnd    *rand.Rand
	waited bool // Wait was called: no more timers

	counts [numFaults]atomic.Int64
	dials  atomic.Int64
	timers sync.WaitGroup // the closes scheduled after a write or a dial
}

// New returns an Injector with faults enabled.
func New(cfg Config) *Injector {
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 20 * time.Millisecond
	}
	if cfg.MaxStall <= 0 {
		cfg.MaxStall = 250 * time.Millisecond
	}
	if cfg.SlowRate <= 0 {
		cfg.SlowRate = min(10*cfg.Rate, 0.5)
	}
	if cfg.Faults == nil {
		cfg.Faults = AllFaults()
	}
	in := &Injector{cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	in.enabled.Store(true)
	return in
}

// SetEnabled turns the faults on or off; connections stay wrapped.
func (in *Injector) SetEnabled(on bool) { in.enabled.Store(on) }

// Wait waits for the closes and flushes the Injector scheduled
// (CloseMidBatch, ResetAfterDial, DelayWrite) to run, so that a test leaves no timer behind; from
// then on such a close happens at once.
func (in *Injector) Wait() {
	in.mu.Lock()
	in.waited = true
	in.mu.Unlock()
	in.timers.Wait()
}

// Counts returns how many times each fault was injected.
func (in *Injector) Counts() map[Fault]int64 {
	out := make(map[Fault]int64, numFaults)
	for f := range in.counts {
		out[Fault(f)] = in.counts[f].Load()
	}
	return out
}

// Injected returns how many faults were injected in all.
func (in *Injector) Injected() int64 {
	var n int64
	for f := range in.counts {
		n += in.counts[f].Load()
	}
	return n
}

// Dials returns how many connections the Injector dialled.
func (in *Injector) Dials() int64 { return in.dials.Load() }

// String summarises the faults injected, for a test's log.
func (in *Injector) String() string {
	var b strings.Builder
	for f := range in.counts {
		if f > 0 {
			b.WriteString(" ")
		}
		b.WriteString(Fault(f).String())
		b.WriteString("=")
		b.WriteString(strconv.FormatInt(in.counts[f].Load(), 10))
	}
	b.WriteString(" dials=")
	b.WriteString(strconv.FormatInt(in.dials.Load(), 10))
	return b.String()
}

// draw returns the fault a call gets, of those in kinds that the Config
// enables, at the given rate, and a random fraction in [0, 1) for its
// size; ok is false when it gets none.
func (in *Injector) draw(rate float64, kinds ...Fault) (f Fault, frac float64, ok bool) {
	if !in.enabled.Load() || rate <= 0 {
		return 0, 0, false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.rnd.Float64() >= rate {
		return 0, 0, false
	}
	var pick [numFaults]Fault
	n := 0
	for _, k := range kinds {
		for _, e := range in.cfg.Faults {
			if k == e {
				pick[n] = k
				n++
				break
			}
		}
	}
	if n == 0 {
		return 0, 0, false
	}
	f = pick[in.rnd.IntN(n)]
	in.counts[f].Add(1)
	return f, in.rnd.Float64(), true
}

// delay is frac of MaxDelay.
func (in *Injector) delay(frac float64) time.Duration {
	return time.Duration(frac * float64(in.cfg.MaxDelay))
}

// after closes nc after d (later).
func (in *Injector) after(d time.Duration, nc net.Conn) {
	in.later(d, func() { _ = nc.Close() })
}

// later runs fn after d, counted by Wait; once Wait was called, at once.
func (in *Injector) later(d time.Duration, fn func()) {
	in.mu.Lock()
	if in.waited {
		in.mu.Unlock()
		fn()
		return
	}
	in.timers.Add(1)
	in.mu.Unlock()
	time.AfterFunc(d, func() {
		defer in.timers.Done()
		fn()
	})
}

// Dial dials network, addr as a net.Dialer does, bounded by ctx, and wraps
// the connection (Wrap); the dial itself may fail (FailDial) or its
// connection be reset moments later (ResetAfterDial). It has the signature
// of go-redis' Options.Dialer.
func (in *Injector) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	f, frac, hit := in.draw(in.cfg.Rate, FailDial, ResetAfterDial)
	if hit && f == FailDial {
		return nil, &net.OpError{Op: "dial", Net: network, Err: ErrInjected}
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	in.dials.Add(1)
	c := in.Wrap(nc)
	if hit && f == ResetAfterDial {
		in.after(in.delay(frac)/4, c)
	}
	return c, nil
}

// Wrap wraps nc in a Conn that injects the faults of in.
func (in *Injector) Wrap(nc net.Conn) net.Conn {
	c := &Conn{Conn: nc, in: in}
	if f, frac, ok := in.draw(in.cfg.SlowRate, StallReader); ok && f == StallReader {
		c.stall = time.Duration(frac * float64(in.cfg.MaxStall))
	}
	return c
}

// Conn is a connection that injects faults into its Writes and Reads.
type Conn struct {
	net.Conn
	in    *Injector
	stall time.Duration // StallReader: a failed Read returns this late

	mu         sync.Mutex // DelayWrite's state
	held       []byte     // bytes held back, in order
	holding    bool
	closeLater bool // Close came while holding
}

// Write writes b, or fails (FailWrite), writes part of it and closes
// (PartialWrite), writes it and closes moments later (CloseMidBatch), or
// holds it back (DelayWrite, and every Write while bytes are held, unless
// it fails).
func (c *Conn) Write(b []byte) (int, error) {
	c.mu.Lock()
	if c.holding {
		c.mu.Unlock()
		if _, _, ok := c.in.draw(c.in.cfg.Rate, FailWrite); ok {
			return 0, ErrInjected // the client gives the connection up
		}
		c.mu.Lock()
		c.held = append(c.held, b...)
		c.mu.Unlock()
		return len(b), nil
	}
	c.mu.Unlock()
	f, frac, ok := c.in.draw(c.in.cfg.Rate, FailWrite, PartialWrite, CloseMidBatch, DelayWrite)
	if !ok {
		return c.Conn.Write(b)
	}
	switch f {
	case FailWrite:
		return 0, ErrInjected
	case PartialWrite:
		n, _ := c.Conn.Write(b[:int(frac*float64(len(b)))])
		_ = c.Conn.Close()
		return n, ErrInjected
	case DelayWrite:
		c.mu.Lock()
		c.holding, c.held = true, append(c.held[:0], b...)
		c.mu.Unlock()
		c.in.later(time.Duration(frac*float64(c.in.cfg.MaxStall)), c.flush)
		return len(b), nil
	}
	n, err := c.Conn.Write(b)
	c.in.after(c.in.delay(frac)/4, c.Conn)
	return n, err
}

// flush sends the held bytes and stops holding; a Close that came
// meanwhile closes the connection then.
func (c *Conn) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.Conn.SetWriteDeadline(time.Time{})
	_, _ = c.Conn.Write(c.held)
	c.holding, c.held = false, nil
	if c.closeLater {
		_ = c.Conn.Close()
	}
}

// Close closes the connection; while bytes are held it stops the reading
// (a TCP connection's read side is shut) and closes once they went out.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding {
		c.closeLater = true
		if rc, ok := c.Conn.(interface{ CloseRead() error }); ok {
			_ = rc.CloseRead()
		}
		return nil
	}
	return c.Conn.Close()
}

// Read reads into b, late (DelayRead), or returns part of what it read
// and closes (TruncateRead); once reading fails, it returns the error late
// when the connection stalls its reader (StallReader).
func (c *Conn) Read(b []byte) (int, error) {
	if _, frac, ok := c.in.draw(c.in.cfg.SlowRate, DelayRead); ok {
		time.Sleep(c.in.delay(frac))
	}
	f, frac, ok := c.in.draw(c.in.cfg.Rate, TruncateRead)
	n, err := c.Conn.Read(b)
	if err != nil {
		if c.stall > 0 {
			time.Sleep(c.stall)
		}
		return n, err
	}
	if ok && f == TruncateRead && n > 1 {
		n = 1 + int(frac*float64(n-1))
		_ = c.Conn.Close()
	}
	return n, nil
}
