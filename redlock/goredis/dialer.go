package goredis

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// dialer dials a node for go-redis. A dial that fails does not return its
// error to go-redis, whose pool would print "failed to dial after 1
// attempts" through its process-wide logger (redis.SetLogger) onto the
// user's stderr: it returns a connection that fails every read and write
// with that error, which go-redis then reports to the request, drops, and
// dials again on the next use. The adapter leaves go-redis's logger alone.
type dialer struct {
	d       net.Dialer
	network string
	tls     *tls.Config
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.network != "" {
		network = d.network
	}
	c, err := d.d.DialContext(ctx, network, addr)
	if err == nil && d.tls != nil {
		tc := tls.Client(c, d.tls)
		if err = tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
		} else {
			c = tc
		}
	}
	if err != nil {
		return failedConn{err: err, addr: failedAddr{network, addr}}, nil
	}
	return c, nil
}

// failedConn is a dial that failed, as a connection: every read and write
// returns the dial's error.
type failedConn struct {
	err  error
	addr failedAddr
}

func (c failedConn) Read([]byte) (int, error)         { return 0, c.err }
func (c failedConn) Write([]byte) (int, error)        { return 0, c.err }
func (c failedConn) Close() error                     { return nil }
func (c failedConn) LocalAddr() net.Addr              { return c.addr }
func (c failedConn) RemoteAddr() net.Addr             { return c.addr }
func (c failedConn) SetDeadline(time.Time) error      { return nil }
func (c failedConn) SetReadDeadline(time.Time) error  { return nil }
func (c failedConn) SetWriteDeadline(time.Time) error { return nil }

// failedAddr is the address a failed dial was for.
type failedAddr struct{ network, addr string }

func (a failedAddr) Network() string { return a.network }
func (a failedAddr) String() string  { return a.addr }
