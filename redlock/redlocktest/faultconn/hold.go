package faultconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// HoldConn is a connection for a test to steer by hand: its bytes can be
// held back on the way to the node (a segment delayed in the network, or
// a node that reads them late), its Writes failed on demand, and a Close
// while bytes are held closes it only once Release sent them (the
// segments of a connection already on their way when its client gave it
// up). It is safe for concurrent use.
type HoldConn struct {
	net.Conn
	mu         sync.Mutex
	held       bool
	buf        []byte
	failWrite  bool
	closeLater bool
	heldWrites int

	readEnded atomic.Bool
	reads     atomic.Int64
}

// Hold keeps every Write from now on, reported written, until Release.
func (c *HoldConn) Hold() {
	c.mu.Lock()
	c.held = true
	c.mu.Unlock()
}

// Release sends what was held, in order, and stops holding; a Close that
// came meanwhile closes the connection then.
func (c *HoldConn) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	_ = c.Conn.SetWriteDeadline(time.Time{}) // the writer's may have passed
	_, err := c.Conn.Write(c.buf)
	c.buf = nil
	if c.closeLater {
		c.closeLater = false
		return errors.Join(err, c.Conn.Close())
	}
	return err
}

// FailWrites makes every Write fail with ErrInjected (on), or not.
func (c *HoldConn) FailWrites(on bool) {
	c.mu.Lock()
	c.failWrite = on
	c.mu.Unlock()
}

// HeldWrites returns how many Writes were held so far.
func (c *HoldConn) HeldWrites() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heldWrites
}

// Reads returns how many Reads returned so far, and whether one failed
// (the connection's reader is gone).
func (c *HoldConn) Reads() (n int64, ended bool) { return c.reads.Load(), c.readEnded.Load() }

// Write writes b, keeps it (Hold), or fails (FailWrites).
func (c *HoldConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failWrite {
		return 0, ErrInjected
	}
	if c.held {
		c.buf = append(c.buf, b...)
		c.heldWrites++
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// Read reads from the connection and counts the Read (Reads).
func (c *HoldConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.readEnded.Store(true)
	}
	c.reads.Add(1)
	return n, err
}

// Close closes the connection, or, while bytes are held, stops reading
// (a TCP connection's read side is shut, so its reader ends) and closes it
// once Release sent them.
func (c *HoldConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.buf) > 0 {
		c.closeLater = true
		if rc, ok := c.Conn.(interface{ CloseRead() error }); ok {
			_ = rc.CloseRead()
		}
		return nil
	}
	return c.Conn.Close()
}

// WaitGone polls the node's client list (through truth, a client of the
// same node) until c is no longer on it, or ctx ends: whatever c carried
// has run on the node, or never will.
func WaitGone(ctx context.Context, truth *redis.Client, c *HoldConn) error {
	addr := "addr=" + c.LocalAddr().String() + " "
	for {
		list, err := truth.ClientList(ctx).Result()
		if err == nil && !strings.Contains(list, addr) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("faultconn: connection %s still on the node: %w", c.LocalAddr(), ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// HoldDialer dials HoldConns and keeps them, in order. Its Dial has the
// signature of go-redis' Options.Dialer. It is safe for concurrent use.
type HoldDialer struct {
	mu    sync.Mutex
	conns []*HoldConn
}

// Dial dials network, addr and wraps the connection in a HoldConn.
func (d *HoldDialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &HoldConn{Conn: nc}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

// Conns returns the connections dialled so far, in order.
func (d *HoldDialer) Conns() []*HoldConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*HoldConn(nil), d.conns...)
}
