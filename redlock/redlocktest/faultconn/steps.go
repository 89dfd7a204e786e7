package faultconn

import (
	"net"
	"sync/atomic"
)

// Steps are the faults of a StepConn, counted in its Writes: a
// connection's handshake is a few writes, each followed by its replies,
// and Steps fails one of them, whichever a test names. A zero field is
// never.
type Steps struct {
	// FailWrite fails the FailWrite-th Write and every one after it.
	FailWrite int32
	// DropFrom drops the DropFrom-th Write and every one after it: the
	// bytes are lost on the way, the Write reports them written.
	DropFrom int32
	// FailReadsFrom fails every Read once FailReadsFrom Writes were made:
	// the replies never come.
	FailReadsFrom int32
}

// StepConn is a connection that fails as its Steps say.
type StepConn struct {
	net.Conn
	steps  Steps
	writes atomic.Int32
}

// WithSteps wraps nc in a StepConn.
func WithSteps(nc net.Conn, s Steps) *StepConn { return &StepConn{Conn: nc, steps: s} }

// Write writes b, fails (ErrInjected), or drops it, as the Steps say.
func (c *StepConn) Write(b []byte) (int, error) {
	n := c.writes.Add(1)
	switch {
	case c.steps.FailWrite > 0 && n >= c.steps.FailWrite:
		return 0, ErrInjected
	case c.steps.DropFrom > 0 && n >= c.steps.DropFrom:
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// Read reads, or fails (ErrInjected) once the Steps' FailReadsFrom Writes
// were made.
func (c *StepConn) Read(b []byte) (int, error) {
	if c.steps.FailReadsFrom > 0 && c.writes.Load() >= c.steps.FailReadsFrom {
		return 0, ErrInjected
	}
	return c.Conn.Read(b)
}
